// float4 access to shared-memory tiles. On the GPU one 16-byte instruction; in the host build
// plain element copies (no type-punning through float4, which the host compiler's aliasing
// rules would not allow; it vectorises the copies itself).
#pragma once

#include "instrumentation/simt/cuda_compat.h"

namespace ts::device {

__device__ __forceinline__ float4 load_f4(const float* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const float4*>(p);
#else
  return make_float4(p[0], p[1], p[2], p[3]);
#endif
}

__device__ __forceinline__ void store_f8(float* dst, const float* src) {
#if defined(__CUDA_ARCH__)
  reinterpret_cast<float4*>(dst)[0] = make_float4(src[0], src[1], src[2], src[3]);
  reinterpret_cast<float4*>(dst)[1] = make_float4(src[4], src[5], src[6], src[7]);
#else
  for (int i = 0; i < 8; ++i) dst[i] = src[i];
#endif
}

// Written as a * b + c, not fmaf: nvcc contracts it to one FMA instruction anyway, while on
// the host fmaf without -mfma is a library call per element.
__device__ __forceinline__ float dot4(float4 a, float4 b, float acc) {
  acc = a.x * b.x + acc;
  acc = a.y * b.y + acc;
  acc = a.z * b.z + acc;
  return a.w * b.w + acc;
}

}  // namespace ts::device
