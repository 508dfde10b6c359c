// The tensor-core steps of our kernels on instrumentation/simt/tensor_core.h's operations, typed by
// the input dtype: one mma.sync m16n8k16 (16-bit A and B fragments, fp32 accumulators) and the
// packing of two floats into one 16-bit pair of an A fragment (P for P V). FA-2
// (fa2_forward.cuh) and the Split-K decode on tensor cores (splitk_partial.cuh) use them.
#pragma once

#include <cstdint>

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/simt/tensor_core.h"
#include "kernels/device/vec_io.cuh"

namespace ts::device {

// d += a b for the B fragment's two registers b0, b1; the last argument picks the dtype.
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                    __half) {
  const uint32_t b[2] = {b0, b1};
  tc::mma_m16n8k16_f16(d, a, b, d);
}
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                    __nv_bfloat16) {
  const uint32_t b[2] = {b0, b1};
  tc::mma_m16n8k16_bf16(d, a, b, d);
}

// Two floats rounded to T (round to nearest even), `low` in the low half.
template <typename T>
__device__ __forceinline__ uint32_t pack(float low, float high) {
  return tc::pack_halves(from_float<T>(low), from_float<T>(high));
}

}  // namespace ts::device
