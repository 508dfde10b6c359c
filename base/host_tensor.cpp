#include "base/host_tensor.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "base/dtype_conversion.h"

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

namespace {

template <typename Out>
void convert(const HostTensor& t, int64_t first, int64_t count, Out* out) {
  switch (t.dtype) {
    case DType::f32: {
      const float* p = t.data_as<float>() + first;
      for (int64_t i = 0; i < count; ++i) out[i] = p[i];
      break;
    }
    case DType::f16: {
      const uint16_t* p = t.data_as<uint16_t>() + first;
      if constexpr (std::is_same_v<Out, float>) {
        widen_f16(p, static_cast<size_t>(count), out);
      } else {  // through a float buffer, a block at a time
        float block[256];
        for (int64_t i = 0; i < count; i += 256) {
          const int64_t n = std::min<int64_t>(256, count - i);
          widen_f16(p + i, static_cast<size_t>(n), block);
          for (int64_t k = 0; k < n; ++k) out[i + k] = block[k];
        }
      }
      break;
    }
    case DType::bf16: {
      const __nv_bfloat16* p = t.data_as<__nv_bfloat16>() + first;
      for (int64_t i = 0; i < count; ++i) out[i] = __bfloat162float(p[i]);
      break;
    }
  }
}

}  // namespace

void HostTensor::copy_floats(int64_t first, int64_t count, float* out) const { convert(*this, first, count, out); }
void HostTensor::copy_doubles(int64_t first, int64_t count, double* out) const { convert(*this, first, count, out); }

std::vector<float> HostTensor::to_float() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  copy_floats(0, numel(), out.data());
  return out;
}

std::vector<double> HostTensor::to_double() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  copy_doubles(0, numel(), out.data());
  return out;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace ts
