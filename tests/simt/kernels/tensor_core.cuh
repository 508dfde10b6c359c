// Tensor-core operations (instrumentation/simt/tensor_core.h, wmma.h), run lane by lane on both
// backends; the tests (test_tensor_core.cpp) compute every lane's expected registers on the host
// from the PTX-documented layout.
//
//   mma_registers_kernel<Element>: each thread loads its A (4 regs), B (2 regs) and C (4 floats)
//     from a/b/c[thread] as given, runs mma.m16n8k16 (fp16 or bf16 inputs; into c itself when
//     in_place) and writes its 4 D registers to d[4 * thread + i]. Every warp has its own
//     matrices.
//   ldmatrix_kernel<kMatrices, kTransposed>: copies `tile` (tile_elements 16-bit patterns) into
//     dynamic shared memory; thread t passes the row at element row_offsets[t] to ldmatrix and
//     writes its registers to out[kMatrices * t + m].
//   attention_tile_kernel<Element>: one warp per block, an attention step in miniature: Q, K, V
//     (test_types.h) into shared memory by cp.async.cg; S = Q K^T + c_s (two 16x8 mma tiles:
//     ldmatrix.x4 of Q for A, ldmatrix.x4 of K for both B); P = S rounded to Element and
//     repacked from the two accumulator tiles into an A fragment (no shared memory); O = P V +
//     c_o (ldmatrix.x2.trans of V for B). Thread t writes s[8t + i] (tile i / 4, register
//     i % 4) and o[4t + i].
//   async_copy_kernel: cp.async of every size and flavour (test_types.h: regions, modes).
//   wmma_kernel<Input, Accumulator, kAColMajor, kBColMajor>: per warp, D = 2 (A B + C) with
//     wmma m16n16k16: A and B loaded in their layouts, C loaded (layout c_col_major) or set by
//     fill_fragment(fill_value) when fill, the product doubled element-wise over num_elements,
//     stored with layout d_col_major.
#pragma once

#include <type_traits>

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/simt/tensor_core.h"
#include "instrumentation/simt/wmma.h"
#include "tests/simt/kernels/test_types.h"

namespace ts::test {

template <typename Element>
__device__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                             const float (&c)[4]) {
  if constexpr (std::is_same_v<Element, __half>) {
    ts::tc::mma_m16n8k16_f16(d, a, b, c);
  } else {
    ts::tc::mma_m16n8k16_bf16(d, a, b, c);
  }
}

template <typename Element>
__global__ void mma_registers_kernel(const uint32_t* a, const uint32_t* b, const float* c, float* d,
                                     bool in_place) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t a_regs[4];
  uint32_t b_regs[2];
  float c_regs[4];
  float d_regs[4];
  for (int i = 0; i < 4; ++i) {
    a_regs[i] = a[4 * t + i];
    c_regs[i] = c[4 * t + i];
  }
  for (int i = 0; i < 2; ++i) b_regs[i] = b[2 * t + i];
  if (in_place) {
    mma_m16n8k16<Element>(c_regs, a_regs, b_regs, c_regs);
    for (int i = 0; i < 4; ++i) d_regs[i] = c_regs[i];
  } else {
    mma_m16n8k16<Element>(d_regs, a_regs, b_regs, c_regs);
  }
  for (int i = 0; i < 4; ++i) d[4 * t + i] = d_regs[i];
}

template <int kMatrices, bool kTransposed>
__global__ void ldmatrix_kernel(const uint16_t* tile, unsigned tile_elements,
                                const unsigned* row_offsets, uint32_t* out) {
  TS_DYNAMIC_SHARED(uint16_t, shared_tile);
  for (unsigned i = threadIdx.x; i < tile_elements; i += blockDim.x) shared_tile[i] = tile[i];
  __syncthreads();
  uint32_t r[kMatrices];
  const uint16_t* row = shared_tile + row_offsets[threadIdx.x];
  if constexpr (kTransposed) {
    ts::tc::ldmatrix_trans(r, row);
  } else {
    ts::tc::ldmatrix(r, row);
  }
  for (int m = 0; m < kMatrices; ++m) out[kMatrices * threadIdx.x + m] = r[m];
}

template <typename Element>
__device__ uint32_t round_and_pack(float low, float high) {
  if constexpr (std::is_same_v<Element, __half>) {
    return ts::tc::pack_halves(__float2half_rn(low), __float2half_rn(high));
  } else {
    return ts::tc::pack_halves(__float2bfloat16_rn(low), __float2bfloat16_rn(high));
  }
}

template <typename Element>
__global__ void attention_tile_kernel(const uint16_t* tiles, const float* c_s, const float* c_o,
                                      float* s, float* o) {
  constexpr unsigned kQ = 0, kK = 16 * 16, kV = 2 * 16 * 16;
  constexpr unsigned kChunks = kAttentionTileElements * 2 / 16;  // 16-byte cp.async copies
  TS_DYNAMIC_SHARED(uint16_t, shared);
  const uint16_t* block_tiles = tiles + blockIdx.x * kAttentionTileElements;
  const unsigned lane = threadIdx.x;
  for (unsigned chunk = lane; chunk < kChunks; chunk += 32) {
    ts::tc::cp_async_cg(shared + 8 * chunk, block_tiles + 8 * chunk);
  }
  ts::tc::cp_async_commit_group();
  ts::tc::cp_async_wait_group<0>();
  __syncthreads();

  // A = Q: matrix m = lane / 8 is (rows 0-7 | 8-15) x (cols 0-7 | 8-15) in a0a1, a2a3, a4a5,
  // a6a7 order; lane supplies row lane % 8 of it.
  uint32_t q[4];
  ts::tc::ldmatrix(q, shared + kQ + 16 * (lane % 8 + 8 * (lane / 8 % 2)) + 8 * (lane / 16));
  // B of key tile j = K rows 8j..8j+7 (n) by dims (k): matrices (keys 0-7 | 8-15) x (dims 0-7 |
  // 8-15), dims fastest, so registers 0-1 are tile 0's b and 2-3 tile 1's.
  uint32_t k[4];
  ts::tc::ldmatrix(k, shared + kK + 16 * (lane % 8 + 8 * (lane / 16)) + 8 * (lane / 8 % 2));
  const unsigned t = blockIdx.x * 32 + lane;
  float s_tiles[2][4];
  for (int tile = 0; tile < 2; ++tile) {
    const uint32_t b[2] = {k[2 * tile], k[2 * tile + 1]};
    float c[4];
    for (int i = 0; i < 4; ++i) c[i] = c_s[8 * t + 4 * tile + i];
    mma_m16n8k16<Element>(s_tiles[tile], q, b, c);
    for (int i = 0; i < 4; ++i) s[8 * t + 4 * tile + i] = s_tiles[tile][i];
  }
  // P as A: the accumulator of key tile j holds columns 8j + 2 * (lane % 4) + {0, 1} of rows
  // lane / 4 (c0, c1) and lane / 4 + 8 (c2, c3): exactly a4j..a4j+3 of an A fragment.
  const uint32_t p[4] = {round_and_pack<Element>(s_tiles[0][0], s_tiles[0][1]),
                         round_and_pack<Element>(s_tiles[0][2], s_tiles[0][3]),
                         round_and_pack<Element>(s_tiles[1][0], s_tiles[1][1]),
                         round_and_pack<Element>(s_tiles[1][2], s_tiles[1][3])};
  // B = V (keys = k by dims = n), row-major: .trans hands out column-major fragments; lane
  // supplies key row lane % 16 (lanes 16-31: the same rows, not read).
  uint32_t v[2];
  ts::tc::ldmatrix_trans(v, shared + kV + 8 * (lane % 16));
  float c[4];
  float out[4];
  for (int i = 0; i < 4; ++i) c[i] = c_o[4 * t + i];
  mma_m16n8k16<Element>(out, p, v, c);
  for (int i = 0; i < 4; ++i) o[4 * t + i] = out[i];
}

__global__ void async_copy_kernel(const uint32_t* src, uint32_t* out, AsyncCopyMode mode) {
  TS_DYNAMIC_SHARED(uint32_t, shared);
  const unsigned t = threadIdx.x;
  const unsigned zfill = async_copy_zfill_bytes(t);
  // The words this thread copies in group 0: (first word, count) per region.
  const unsigned group0[6][2] = {{4 * t, 4},       {128 + 2 * t, 2}, {192 + t, 1},
                                 {224 + 4 * t, 4}, {352 + 4 * t, 4}, {480 + 4 * t, 4}};
  const unsigned group1 = kAsyncCopyGroup1Word + 4 * t;
  ts::tc::cp_async_ca<16>(shared + group0[0][0], src + group0[0][0]);
  ts::tc::cp_async_ca<8>(shared + group0[1][0], src + group0[1][0]);
  ts::tc::cp_async_ca<4>(shared + group0[2][0], src + group0[2][0]);
  ts::tc::cp_async_cg(shared + group0[3][0], src + group0[3][0]);
  ts::tc::cp_async_ca_zfill<16>(shared + group0[4][0], src + group0[4][0], zfill);
  ts::tc::cp_async_cg_zfill(shared + group0[5][0], src + group0[5][0], 16 - zfill);
  ts::tc::cp_async_commit_group();
  ts::tc::cp_async_cg(shared + group1, src + group1);
  if (mode == AsyncCopyMode::wait_groups) {
    ts::tc::cp_async_commit_group();
    ts::tc::cp_async_wait_group<1>();
  } else if (mode == AsyncCopyMode::wait_all) {
    ts::tc::cp_async_wait_all();
  }
  for (const auto& region : group0) {
    for (unsigned w = region[0]; w < region[0] + region[1]; ++w) out[w] = shared[w];
  }
  if (mode != AsyncCopyMode::wait_all) {
    for (unsigned w = group1; w < group1 + 4; ++w) out[kAsyncCopyWords + w] = shared[w];
  }
  if (mode == AsyncCopyMode::wait_groups) ts::tc::cp_async_wait_group<0>();
  for (unsigned w = group1; w < group1 + 4; ++w) out[2 * kAsyncCopyWords + w] = shared[w];
}

template <typename Input, typename Accumulator, bool kAColMajor, bool kBColMajor>
__global__ void wmma_kernel(const Input* a, const Input* b, const Accumulator* c, Accumulator* d,
                            bool c_col_major, bool d_col_major, bool fill, float fill_value) {
  namespace wmma = nvcuda::wmma;
  using LayoutA = std::conditional_t<kAColMajor, wmma::col_major, wmma::row_major>;
  using LayoutB = std::conditional_t<kBColMajor, wmma::col_major, wmma::row_major>;
  const unsigned offset = threadIdx.x / 32 * kWmmaTileElements;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, Input, LayoutA> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, Input, LayoutB> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, Accumulator> acc;
  wmma::load_matrix_sync(fa, a + offset, kWmmaLdm);
  wmma::load_matrix_sync(fb, b + offset, kWmmaLdm);
  if (fill) {
    wmma::fill_fragment(acc, Accumulator(fill_value));
  } else {
    wmma::load_matrix_sync(acc, c + offset, kWmmaLdm,
                           c_col_major ? wmma::mem_col_major : wmma::mem_row_major);
  }
  wmma::mma_sync(acc, fa, fb, acc);
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = acc.x[i] * Accumulator(2.0f);
  wmma::store_matrix_sync(d + offset, acc, kWmmaLdm,
                          d_col_major ? wmma::mem_col_major : wmma::mem_row_major);
}

}  // namespace ts::test
