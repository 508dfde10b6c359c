// Which element of a matrix each lane's fragment register holds, for the tensor-core shapes
// tensor_core.h offers: mma.m16n8k16 with fp16/bf16 inputs and fp32 accumulators, and the 8x8
// matrices of ldmatrix.m8n8 (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
// type" and "Warp-level matrix load instruction: ldmatrix").
//
// Kernels use it to fill fragments by hand or to find which output a register holds; the CPU
// runtime's emulation of mma, ldmatrix and wmma uses the same functions, so both executors
// agree on the layout by construction, and the GPU tests check it against the hardware.
// Host and device; no runtime needed.
//
// Notation (PTX's): lane = %laneid (0..31), groupID = lane >> 2, threadID_in_group = lane % 4.
// A fragment's elements are numbered "low to high": element 2j is the low 16 bits of
// register j, element 2j+1 the high 16 bits (for fp32 accumulators, element i is register i).
#pragma once

#if defined(__CUDACC__)
#define TS_TC_HOST_DEVICE __host__ __device__
#else
#define TS_TC_HOST_DEVICE
#endif

namespace ts::tc {

struct FragmentCoordinate {
  unsigned row;
  unsigned col;
};

// mma.m16n8k16, A (16 x 16, row-major "row"): 4 registers of 2 elements, i = 0..7.
//   row = groupID for a0, a1, a4, a5; groupID + 8 for a2, a3, a6, a7
//   col = threadID_in_group * 2 + (i & 1), plus 8 for a4..a7
TS_TC_HOST_DEVICE constexpr FragmentCoordinate mma_m16n8k16_a(unsigned lane, unsigned i) {
  return {(lane >> 2) + 8 * ((i >> 1) & 1), (lane % 4) * 2 + (i & 1) + 8 * (i >> 2)};
}

// mma.m16n8k16, B (16 x 8, K x N, column-major "col"): 2 registers of 2 elements, i = 0..3.
//   row (k) = threadID_in_group * 2 + (i & 1), plus 8 for b2, b3
//   col (n) = groupID
TS_TC_HOST_DEVICE constexpr FragmentCoordinate mma_m16n8k16_b(unsigned lane, unsigned i) {
  return {(lane % 4) * 2 + (i & 1) + 8 * (i >> 1), lane >> 2};
}

// mma.m16n8k16, C and D (16 x 8, fp32): 4 registers, i = 0..3.
//   row = groupID for c0, c1; groupID + 8 for c2, c3
//   col = threadID_in_group * 2 + (i & 1)
TS_TC_HOST_DEVICE constexpr FragmentCoordinate mma_m16n8k16_c(unsigned lane, unsigned i) {
  return {(lane >> 2) + 8 * (i >> 1), (lane % 4) * 2 + (i & 1)};
}

// ldmatrix.m8n8 (.b16): lane 8m + r supplies the address of row r of matrix m (16 bytes, 8
// elements). Register m of every lane holds 2 elements of matrix m, i = 0 (low) or 1 (high):
//   without .trans: row = groupID, col = threadID_in_group * 2 + i
//   with .trans:    row = threadID_in_group * 2 + i, col = groupID
// (.trans hands out the transposed matrix in the layout of the plain load.)
TS_TC_HOST_DEVICE constexpr FragmentCoordinate ldmatrix_m8n8(unsigned lane, unsigned i,
                                                             bool transposed) {
  return transposed ? FragmentCoordinate{(lane % 4) * 2 + i, lane >> 2}
                    : FragmentCoordinate{lane >> 2, (lane % 4) * 2 + i};
}

}  // namespace ts::tc
