// Conversions between float32 and the narrow dtypes in bulk: rounding float32 values to a
// dtype (to nearest, ties to even) and back, what the naive same-precision attention does to
// every score, probability and output; and widening fp16 to float32, what the reference and the
// baselines do to every input. The results equal CUDA's host conversions (__float2half_rn,
// __float2bfloat16_rn, __half2float) bit for bit, NaN aside (a NaN stays a NaN); they are only
// faster: bf16 by integer arithmetic, fp16 by the CPU's F16C instructions where it has them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace ts {

// x[i] = float(dtype(x[i])) for i in [0, n). f32: nothing to do.
void round_to_dtype(DType dtype, float* x, size_t n);

// One value (the same rounding).
float round_to_dtype(DType dtype, float x);

// out (n elements of dtype, little-endian) = x[i] rounded to the dtype (the same rounding; f32:
// a copy), for i in [0, n).
void store_as_dtype(DType dtype, const float* x, size_t n, void* out);

// out[i] = the fp16 value whose bits are half_bits[i], as float32 (exact), for i in [0, n).
void widen_f16(const uint16_t* half_bits, size_t n, float* out);

}  // namespace ts
