// Math and bit intrinsics on random inputs, checked against a float64 host reference.
//
//   float_intrinsics_kernel: out[8*i + k] for k = __expf(x), __logf(y), __fdividef(x, y),
//     rsqrtf(y), __saturatef(x), __fmaf_rn(x, y, x), __powf(y, x), __sinf(x); x in [-3, 3],
//     y in [0.5, 2].
//   float_to_int_kernel: rounding conversions (rn, rz, rd, ru, unsigned rn), which saturate
//     and map NaN to 0 on a GPU.
//   bit_intrinsics_kernel: out[6*i + k] = __popc, __clz, __ffs, __brev, __byte_perm(a, b,
//     0x7351), __umulhi(a, b).
//   half_intrinsics_kernel: out[6*i + k] = hexp, __hfma, hsqrt on __half, then on
//     __nv_bfloat16, of x in [-3, 3] and y in [0.5, 2], converted back to float.
//
// Run by tests/simt/test_kernels.cpp on both backends.
#pragma once

#include "instrumentation/simt/cuda_compat.h"

namespace ts::test {

__global__ void float_intrinsics_kernel(const float* x, const float* y, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const float a = x[i];
  const float b = y[i];
  float* o = out + 8 * i;
  o[0] = __expf(a);
  o[1] = __logf(b);
  o[2] = __fdividef(a, b);
  o[3] = rsqrtf(b);
  o[4] = __saturatef(a);
  o[5] = __fmaf_rn(a, b, a);
  o[6] = __powf(b, a);
  o[7] = __sinf(a);
}

__global__ void float_to_int_kernel(const float* x, int* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const float v = x[i];
  int* o = out + 5 * i;
  o[0] = __float2int_rn(v);
  o[1] = __float2int_rz(v);
  o[2] = __float2int_rd(v);
  o[3] = __float2int_ru(v);
  o[4] = static_cast<int>(__float2uint_rn(v));
}

__global__ void bit_intrinsics_kernel(const unsigned* a, const unsigned* b, unsigned* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  unsigned* o = out + 6 * i;
  o[0] = static_cast<unsigned>(__popc(a[i]));
  o[1] = static_cast<unsigned>(__clz(static_cast<int>(a[i])));
  o[2] = static_cast<unsigned>(__ffs(static_cast<int>(a[i])));
  o[3] = __brev(a[i]);
  o[4] = __byte_perm(a[i], b[i], 0x7351u);
  o[5] = __umulhi(a[i], b[i]);
}

__global__ void half_intrinsics_kernel(const float* x, const float* y, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  float* o = out + 6 * i;
  const __half hx = __float2half_rn(x[i]);
  const __half hy = __float2half_rn(y[i]);
  o[0] = __half2float(hexp(hx));
  o[1] = __half2float(__hfma(hx, hy, hx));
  o[2] = __half2float(hsqrt(hy));
  const __nv_bfloat16 bx = __float2bfloat16_rn(x[i]);
  const __nv_bfloat16 by = __float2bfloat16_rn(y[i]);
  o[3] = __bfloat162float(hexp(bx));
  o[4] = __bfloat162float(__hfma(bx, by, bx));
  o[5] = __bfloat162float(hsqrt(by));
}

}  // namespace ts::test
