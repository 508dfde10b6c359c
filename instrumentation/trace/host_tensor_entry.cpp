#include "instrumentation/trace/host_tensor_entry.h"

#include "instrumentation/trace/file_error.h"

namespace ts {

ElemType elem_type_of_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return ElemType::F32;
    case DType::f16: return ElemType::F16;
    case DType::bf16: return ElemType::BF16;
  }
  return ElemType::F32;
}

std::optional<DType> dtype_of_elem_type(ElemType type) {
  switch (type) {
    case ElemType::F32: return DType::f32;
    case ElemType::F16: return DType::f16;
    case ElemType::BF16: return DType::bf16;
    default: return std::nullopt;
  }
}

TensorToWrite tensor_to_write(std::string name, const HostTensor& tensor) {
  return {std::move(name), elem_type_of_dtype(tensor.dtype), tensor.shape, tensor.bytes.data()};
}

HostTensor read_host_tensor(const SafetensorsFile& file, const TensorInfo& tensor) {
  const std::optional<DType> dtype = dtype_of_elem_type(tensor.type);
  if (!dtype)
    throw TensorFileError(file.display_name(),
                          file.display_name() + ": tensor '" + tensor.name + "' has dtype " +
                              std::string(to_string(tensor.type)) +
                              "; tensors for the kernels must be F32, F16 or BF16");
  HostTensor t;
  t.dtype = *dtype;
  t.shape = tensor.shape;
  const std::span<const std::byte> b = file.bytes(tensor);
  t.bytes.assign(b.begin(), b.end());
  return t;
}

}  // namespace ts
