#include "kernels/host_tensor.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace ts {

// CUDA's own host conversions, so that host and kernels round identically.
float HostTensor::get_float(int64_t i) const {
  switch (dtype) {
    case DType::f32: return data_as<float>()[i];
    case DType::f16: return __half2float(data_as<__half>()[i]);
    case DType::bf16: return __bfloat162float(data_as<__nv_bfloat16>()[i]);
  }
  return 0.0f;
}

void HostTensor::set_float(int64_t i, float x) {
  switch (dtype) {
    case DType::f32: data_as<float>()[i] = x; break;
    case DType::f16: data_as<__half>()[i] = __float2half_rn(x); break;
    case DType::bf16: data_as<__nv_bfloat16>()[i] = __float2bfloat16_rn(x); break;
  }
}

std::vector<float> HostTensor::to_float() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = get_float(i);
  return out;
}

std::vector<double> HostTensor::to_double() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = get_float(i);
  return out;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace ts
