// What the tensor-core tests expect, computed on the host: the fragment layouts of the PTX ISA
// written out here in the manual's own terms (independently of
// instrumentation/simt/mma_fragment_layout.h, which the CPU runtime uses), fp16/bf16 rounding,
// random matrices that are exactly representable in the input type, and the tolerance of an
// fp32 tensor-core sum. Used by test_tensor_core.cpp (both backends) and
// test_tensor_core_cpu.cpp.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/simt/test_support.h"

namespace ts::test {

// --- PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" ------------------
// groupID = %laneid >> 2, threadID_in_group = %laneid % 4.
struct MatrixPlace {
  unsigned row;
  unsigned col;
};

// A, .f16/.bf16: a0..a7.
//   row = groupID for ai where 0 <= i < 2 || 4 <= i < 6, groupID + 8 otherwise
//   col = (threadID_in_group * 2) + (i & 0x1) for ai where i < 4, the same + 8 for i >= 4
inline MatrixPlace ptx_a_place(unsigned lane, unsigned i) {
  const unsigned group_id = lane >> 2;
  const unsigned thread_in_group = lane % 4;
  const bool first_rows = i < 2 || (4 <= i && i < 6);
  return {first_rows ? group_id : group_id + 8,
          thread_in_group * 2 + (i & 0x1) + (i < 4 ? 0u : 8u)};
}
// B, .f16/.bf16: b0..b3.
//   row = (threadID_in_group * 2) + (i & 0x1) for bi where i < 2, the same + 8 for i >= 2
//   col = groupID
inline MatrixPlace ptx_b_place(unsigned lane, unsigned i) {
  const unsigned group_id = lane >> 2;
  const unsigned thread_in_group = lane % 4;
  return {thread_in_group * 2 + (i & 0x1) + (i < 2 ? 0u : 8u), group_id};
}
// C/D, .f32: c0..c3.
//   row = groupID for ci where i < 2, groupID + 8 for i >= 2
//   col = (threadID_in_group * 2) + (i & 0x1)
inline MatrixPlace ptx_c_place(unsigned lane, unsigned i) {
  const unsigned group_id = lane >> 2;
  const unsigned thread_in_group = lane % 4;
  return {i < 2 ? group_id : group_id + 8, thread_in_group * 2 + (i & 0x1)};
}

// --- PTX ISA, "Warp-level matrix load instruction: ldmatrix" (.m8n8, .b16) -------------------
// Threads 8m..8m+7 supply the addresses of rows 0..7 of matrix m; each thread receives, in
// register m, elements (groupID, 2 * threadID_in_group) and (groupID, 2 * threadID_in_group
// + 1) of matrix m as low and high halves; with .trans, of the matrix read column-wise, i.e.
// elements (2 * threadID_in_group, groupID) and (2 * threadID_in_group + 1, groupID).
inline MatrixPlace ptx_ldmatrix_place(unsigned lane, unsigned half, bool transposed) {
  const unsigned group_id = lane >> 2;
  const unsigned pair = 2 * (lane % 4) + half;
  return transposed ? MatrixPlace{pair, group_id} : MatrixPlace{group_id, pair};
}

// --- fp16 / bf16 -------------------------------------------------------------------------------

template <typename Element>
struct ElementCodec;
template <>
struct ElementCodec<__half> {
  static constexpr const char* kName = "fp16";
  static uint16_t bits_of(float value) { return __half_as_ushort(__float2half_rn(value)); }
  static float value_of(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
};
template <>
struct ElementCodec<__nv_bfloat16> {
  static constexpr const char* kName = "bf16";
  static uint16_t bits_of(float value) { return __bfloat16_as_ushort(__float2bfloat16_rn(value)); }
  static float value_of(uint16_t bits) { return __bfloat162float(__ushort_as_bfloat16(bits)); }
};

template <typename Element>
float round_to(float value) {
  return ElementCodec<Element>::value_of(ElementCodec<Element>::bits_of(value));
}

inline uint32_t pack_bits(uint16_t low, uint16_t high) {
  return uint32_t{low} | uint32_t{high} << 16;
}

// A rows x cols matrix of values exactly representable in Element, row-major: uniform in
// [-magnitude, magnitude] and rounded, or nonzero integers in [-magnitude, magnitude]. Never
// zero either way (a zero would hide which element a register holds).
template <typename Element>
std::vector<float> random_matrix(TestRandom& random, unsigned rows, unsigned cols, float magnitude,
                                 bool integers) {
  std::uniform_int_distribution<int> whole(-static_cast<int>(magnitude),
                                           static_cast<int>(magnitude));
  std::uniform_real_distribution<float> real(-magnitude, magnitude);
  std::vector<float> m(size_t{rows} * cols);
  for (float& x : m) {
    do {
      x = integers ? static_cast<float>(whole(random.engine()))
                   : round_to<Element>(real(random.engine()));
    } while (x == 0.0f);
  }
  return m;
}

// The error a tensor core may add to sum = c + sum_k a_k * b_k (exact products): each of the
// K + 1 terms may be rounded once into an accumulator with `significand_bits` bits, rounding
// towards zero (unit roundoff 2^(1 - significand_bits)) or to nearest (half that): the standard
// bound (K + 1) u sum |terms|. PTX leaves the order and rounding of the accumulation
// unspecified; float (24 bits) for fp32 accumulators, __half (11 bits) for fp16 ones.
inline double accumulation_tolerance(double sum_of_magnitudes, unsigned k, int significand_bits) {
  return (k + 1) * std::ldexp(1.0, 1 - significand_bits) * sum_of_magnitudes;
}

}  // namespace ts::test
