// Host tensors as safetensors entries: the dtype mapping (DType <-> ElemType), an entry to write
// for a HostTensor and a HostTensor copied out of a file's entry. Trace files and tensor files
// both use them; they live apart from tensor_files.cpp (which hashes files with OpenSSL) so that
// what writes traces (the recorder library among it) needs no libcrypto.
#pragma once

#include <optional>
#include <string>

#include "base/host_tensor.h"
#include "instrumentation/trace/elem_type.h"
#include "instrumentation/trace/safetensors.h"

namespace ts {

ElemType elem_type_of_dtype(DType dtype);           // f32 -> F32, f16 -> F16, bf16 -> BF16
std::optional<DType> dtype_of_elem_type(ElemType type);  // nullopt for the others

// A safetensors entry for a host tensor (no copy: it points into `tensor.bytes`).
TensorToWrite tensor_to_write(std::string name, const HostTensor& tensor);

// A copy of a F32 / F16 / BF16 tensor of a safetensors file; TensorFileError for other dtypes.
HostTensor read_host_tensor(const SafetensorsFile& file, const TensorInfo& tensor);

}  // namespace ts
