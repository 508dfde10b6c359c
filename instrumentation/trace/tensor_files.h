// Tensors for the kernels' inputs from files, and file hashes for a trace's provenance.
//
//   HostTensor q = load_tensor_file("q.npy");                       // float32 / float16
//   HostTensor k = load_tensor_file("qkv.safetensors", "k");       // F32 / F16 / BF16
//   std::string h = sha256_file("q.npy");                          // 64 lowercase hex digits
//
// The format is recognised by content (.npy magic, else safetensors), not by extension.
// Errors name the path: FileReadError (missing, unreadable), NpyFormatError or
// TraceFormatError (damaged), TensorFileError (valid but unusable: dtype, missing name).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "instrumentation/trace/elem_type.h"
#include "instrumentation/trace/safetensors.h"
#include "base/host_tensor.h"

namespace ts {

ElemType elem_type_of_dtype(DType dtype);           // f32 -> F32, f16 -> F16, bf16 -> BF16
std::optional<DType> dtype_of_elem_type(ElemType type);  // nullopt for the others

// A safetensors entry for a host tensor (no copy: it points into `tensor.bytes`).
TensorToWrite tensor_to_write(std::string name, const HostTensor& tensor);

// A copy of a F32 / F16 / BF16 tensor of a safetensors file; TensorFileError for other dtypes.
HostTensor read_host_tensor(const SafetensorsFile& file, const TensorInfo& tensor);

// `name` selects the tensor of a .safetensors file; empty: the file's only tensor. Ignored
// (must be empty) for .npy.
HostTensor load_tensor_file(const std::filesystem::path& path, std::string_view name = {});

// SHA-256 of a file's bytes / of bytes, as 64 lowercase hex digits.
std::string sha256_file(const std::filesystem::path& path);
std::string sha256_hex(std::span<const std::byte> bytes);

}  // namespace ts
