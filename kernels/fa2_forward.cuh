// FA-2 forward: one pass of attention with online softmax on tensor cores (FlashAttention-2's
// schedule: each warp owns its query rows, so the softmax needs no shared memory and no barrier).
//
// What it computes: the attention of fa1_forward.cuh (the same masks, GQA mapping, softcap and
// semantics: base/attention_spec.h, the mask rule through KernelMask), for 16-bit inputs (the
// dtypes and head dims it is built for: kernels/kernel_list.cmake):
//   s_ij = scale * q_i . k_j (softcapped when softcap > 0),  O[i] = softmax_j(s_ij) V,
//   LSE[i] = log sum_j exp(s_ij); a row that sees no key gets O = 0 and LSE = -inf.
// Q K^T and P V run on mma.sync m16n8k16 (16-bit inputs, fp32 accumulation); the softmax state
// is fp32. P is rounded to the input dtype before P V, as every FA-2 kernel does (the mma takes
// 16-bit operands): the `fa2.step` stage declares it (StageInfo::p_rounded) so that the
// reference's yardstick rounds P too; likewise the exponents, exp2 with the scale and log2 e
// folded into one multiply-add (StageInfo::exp2_folded).
//
// How: one block of 4 warps per (query tile, query head, batch); grid (num_q_tiles, heads,
// batch). A query tile holds fa2_block_m(head_dim) rows (kernels/tile_shapes.h): at head dim 64
// 128, warp w owning rows 32w..32w+31 as two mma row blocks of 16, so that every K and V fragment
// a warp loads by ldmatrix feeds two mma (one row block each); at head dim 128 64, warp w owning
// rows 16w..16w+15 (two row blocks' accumulators do not fit the registers there). The block
// visits the kv tiles of 64 keys its rows can see (visible_kv_tiles, as FA-1), and per tile:
//   1. K and V of the next tile are fetched by 16-byte cp.async into the other half of
//      double-buffered shared memory while this tile is computed (one barrier per tile);
//   2. S = Q K^T: Q and K fragments by ldmatrix, Q re-read from shared memory per k-step (held
//      in registers, it leaves the traced build too few and it spills); K's rows are keys, so
//      the plain (non-transposed) ldmatrix gives the col-major B operand;
//   3. online softmax on the accumulator fragments: a lane holds two rows of each row block
//      (groupID and groupID + 8) and the four lanes of a quad share them, so row max and sum take two
//      __shfl_xor_sync (1, 2); exponents by ex2.approx (fast_exp2) with log2(e) (and the
//      scale) folded in;
//   4. O = alpha O + P V: P goes from the S accumulators to the A operand in registers
//      (pack_halves: the C fragment of two n-tiles is the A fragment of one k-step), V by
//      ldmatrix_trans (V's rows are keys: transposed, it is the col-major B operand).
// Shared rows are 16-byte chunks XOR-swizzled by row (chunk c of row r at c ^ (r & 7)), so that
// the 8 rows an ldmatrix phase reads fall in 8 different bank groups.
//
// Variants (KernelVariant): plain (no probes), traced (an `fa2.step` event after every kv tile
// with the running unnormalised m, l, O over keys [0, end of that tile), and a `final` event with
// LSE and the output as written; two kernels, the blocks that record neither running the plain
// build's code in the one and the others the traced block in the other: fa2_forward_kernel below),
// faulty (probes + params.fault):
//   masked_nan, per_tile_softmax, stale_accumulator  as in fa1_forward.cuh;
//   fragment_rows  the final store exchanges each row block's accumulator halves: the values of
//                  c0, c1 (row groupID) go to row groupID + 8 and those of c2, c3 back, so row r
//                  of every 16 holds row r xor 8's output (LSE stays right).
// missing_barrier is not offered: the race it plants (a tile overwritten while slower warps
// still read it) cannot show on the CPU runtime, which lands a cp.async only at its wait, after
// the next barrier, so a kernel without that barrier still reads the old tile there.
//
// Run it: `tilescope capture --kernel fa2 --dtype bf16 [--head-dim 128] [--causal] [--window L,R]
// [--softcap X] [--heads 32 --heads-kv 8] ...`, or ts::launch_attention (kernels/launcher.h) with
// config.kernel = KernelKind::fa2; tests in tests/kernels/.
#pragma once

#include <cstdint>
#include <type_traits>

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/simt/tensor_core.h"
#include "kernels/device/unroll.cuh"
#include "tilescope/probe.h"
#include "kernels/attention_params.h"
#include "kernels/device/block_records.cuh"
#include "kernels/device/kernel_traits.cuh"
#include "kernels/device/mma_ops.cuh"
#include "kernels/device/softmax_math.cuh"
#include "kernels/device/vec_io.cuh"
#include "kernels/kernel_smem.h"
#include "kernels/tile_shapes.h"

namespace ts {

namespace fa2_detail {

inline constexpr float kLog2e = 1.4426950408889634f;

// 2^x by the hardware's approximation (ex2.approx.ftz: one MUFU instruction, relative error
// about 2^-22, results below 2^-126 flushed to zero) where exp2f adds the instructions that keep
// subnormal results: the exponents of scores at or below the running max need no subnormals (a
// weight under 2^-126 adds nothing a 16-bit P or a float sum can hold), and the instructions
// cost 5% of the prefill on an H100. The CPU executor computes exp2f: the two differ in the
// last bits, within the GPU-vs-CPU tolerance of tests/kernels/test_gpu_vs_cpu.cpp.
__device__ __forceinline__ float fast_exp2(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of kD-element rows.
template <int kD>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * kD + ((chunk ^ (row & 7)) << 3);
}

// A tile of kRows rows x kD elements from global memory (rows `row_stride` apart) into swizzled
// shared memory by 16-byte cp.async; rows at or past `valid` are filled with zeros (a zero V
// row times P = 0 keeps the accumulators finite).
template <typename T, int kD, int kRows>
__device__ __forceinline__ void load_tile_async(T* dst, const T* src, int64_t row_stride, int valid,
                                                int tid) {
  constexpr int kChunks = kD / 8;
  constexpr int kPerThread = kRows * kChunks / kKernelThreads;
  static_assert(kPerThread * kKernelThreads == kRows * kChunks, "tile shape");
  TS_UNROLL
  for (int i = 0; i < kPerThread; ++i) {
    const int e = tid + i * kKernelThreads;
    const int r = e / kChunks, c = e % kChunks;
    const bool in = r < valid;
    tc::cp_async_cg_zfill(dst + swizzled<kD>(r, c), in ? src + r * row_stride + c * 8 : src,
                          in ? 16u : 0u);
  }
}

// Blocks per SM that every build of a head dim must fit (ptxas caps the registers to match): at
// head dim 64 two, as many as 255 registers a thread allow (the two row blocks' accumulators
// take more than the 168 of three), so that no build, the traced one included, takes more; at
// head dim 128 shared memory allows two whatever the registers. Measured: docs/perf.md, "FA-2
// prefill on tensor cores".
template <int kD>
inline constexpr int kMinBlocksPerSm = kD == 64 ? 2 : 1;

// The warp shape of a head dim (see the file's comment): query rows a warp owns, and the
// fragments of its S and O accumulators.
template <int kD>
struct WarpShape {
  static constexpr int kBM = fa2_block_m(kD), kBN = kFa2BlockN;
  static constexpr int kWarpRows = kBM / (kKernelThreads / 32);  // query rows per warp
  static constexpr int kMFrags = kWarpRows / 16;                 // mma row blocks (m16) per warp
  static constexpr int kKSteps = kD / 16;                        // k-steps of S = Q K^T
  static constexpr int kSTiles = kBN / 8;                        // n-tiles (8 keys) of S
  static constexpr int kOTiles = kD / 8;                         // n-tiles (8 columns) of O
  static constexpr int kPSteps = kBN / 16;                       // k-steps (16 keys) of P V
  static_assert(kMFrags * 16 * (kKernelThreads / 32) == kBM, "each warp owns whole m16 row blocks");
};

// The row of the query tile that this lane's accumulator half h (0: c0, c1; 1: c2, c3) of row
// block f holds.
template <int kD>
__device__ __forceinline__ int row_of(int tid, int f, int h) {
  const int warp = tid / 32, lane = tid % 32;
  return warp * WarpShape<kD>::kWarpRows + f * 16 + (lane >> 2) + 8 * h;
}

// A block's running state as its lanes hold it: m and l of the lane's rows (the quad's four
// lanes hold the same), O unnormalised in accumulator fragments.
template <int kD>
struct RowState {
  using Shape = WarpShape<kD>;
  float m[Shape::kMFrags][2], l[Shape::kMFrags][2];
  float o[Shape::kMFrags][Shape::kOTiles][4];
};

// What a block's step events (the running state after each kv tile) record: the stage, and the
// split and first key of the keys their states cover (FA-2: no split, key 0; a Split-K partial:
// its split and the split's first key).
struct StepEvents {
  int32_t stage;
  int32_t split;
  int64_t key_begin;
};

// The FA-2 schedule over kv tiles `visited` of query tile `q_tile` of (batch, head): Q and the
// tiles loaded by cp.async, S = Q K^T, the online softmax and O = alpha O + P V on tensor cores,
// a step event after each tile when the block records `events.stage`; the state over the keys of
// the visited tiles left in `st`. The faults of the step (masked_nan, per_tile_softmax,
// stale_accumulator) are read here; the callers' stores read the others. Every thread of the
// block calls it; `smem` is the block's dynamic shared memory (kernel_smem.h: fa2_smem_bytes).
template <typename T, int kD, KernelVariant kVariant>
__device__ __forceinline__ void attend_kv_tiles(const AttentionParams& p, T* smem, int q_tile, int head,
                                                int batch, KvTileRange visited, StepEvents events,
                                                RowState<kD>& st) {
  // Which head dims are built is kernels/kernel_list.cmake's; the swizzle needs 8 chunks a row.
  static_assert(kD % 64 == 0, "a row of Q, K or V must hold a multiple of 8 16-byte chunks (the swizzle)");
  using Traits = device::VariantTraits<kVariant>;
  using Shape = WarpShape<kD>;
  constexpr int kBM = Shape::kBM, kBN = Shape::kBN;
  constexpr int kMFrags = Shape::kMFrags, kKSteps = Shape::kKSteps, kSTiles = Shape::kSTiles;
  constexpr int kOTiles = Shape::kOTiles, kPSteps = Shape::kPSteps;
  constexpr int kTile = kBN * kD;    // elements of one K or V buffer
  constexpr bool kQInRegisters = false;

  T* const q_s = smem;               // [kBM][kD], swizzled
  T* const k_s = q_s + kBM * kD;     // 2 x [kBN][kD]
  T* const v_s = k_s + 2 * kTile;    // 2 x [kBN][kD]
  // The faulty build's product of a tile's P V alone, [kMFrags * kOTiles * 4][threads]
  // (stale_accumulator keeps it from tile to tile): in shared memory, as 64 more registers at
  // head dim 128 spilled.
  float* const pv_s = reinterpret_cast<float*>(v_s + 2 * kTile);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int quad_lane = lane & 3;  // PTX's threadID_in_group
  const int rows = rows_in_q_tile(p.seq_q, kBM, q_tile);
  const int64_t q0 = static_cast<int64_t>(q_tile) * kBM;
  const T* q = static_cast<const T*>(p.q) + batch * p.q_batch_stride + head * p.q_head_stride +
               q0 * p.q_row_stride;
  const int kv_head = kv_head_of<int>(head, p.heads, p.heads_kv);
  const T* k = static_cast<const T*>(p.k) + batch * p.k_batch_stride + kv_head * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + batch * p.v_batch_stride + kv_head * p.v_head_stride;
  const int64_t block = device::block_linear_index();
  const tilescope::BlockProbe<Traits::kTrace> probe(p.trace, block);
  const bool guard = !Traits::has(p, Fault::masked_nan);
  const bool per_tile_softmax = Traits::has(p, Fault::per_tile_softmax);
  const bool stale = Traits::has(p, Fault::stale_accumulator);

  const int warp_row0 = warp * Shape::kWarpRows;
  auto row_of = [&](int f, int h) { return fa2_detail::row_of<kD>(tid, f, h); };
  // The keys that every one of this lane's rows sees (past seq_kv, causal, window): a kv tile
  // within them needs no per-key test.
  KeySpan all_rows_see{0, p.seq_kv};
  TS_UNROLL
  for (int f = 0; f < kMFrags; ++f)
    TS_UNROLL
    for (int h = 0; h < 2; ++h) {
      const KeySpan span = p.mask.row_keys(q0 + row_of(f, h));
      all_rows_see.begin = span.begin > all_rows_see.begin ? span.begin : all_rows_see.begin;
      all_rows_see.end = span.end < all_rows_see.end ? span.end : all_rows_see.end;
    }
  const bool softcap = p.softcap > 0.0f;
  // Without a softcap the scores stay raw (q . k) until the exponent, which folds the scale in;
  // with one they are scaled and capped first.
  const float to_scaled = softcap ? 1.0f : p.scale;
  const float exp2_factor = softcap ? fa2_detail::kLog2e : p.scale * fa2_detail::kLog2e;

  // Q, then the first kv tile: two cp.async groups.
  fa2_detail::load_tile_async<T, kD, kBM>(q_s, q, p.q_row_stride, rows, tid);
  tc::cp_async_commit_group();
  if (!visited.empty()) {
    const int64_t j0 = static_cast<int64_t>(visited.begin) * kBN;
    const int keys = static_cast<int>(p.seq_kv - j0 < kBN ? p.seq_kv - j0 : kBN);
    fa2_detail::load_tile_async<T, kD, kBN>(k_s, k + j0 * p.k_row_stride, p.k_row_stride, keys, tid);
    fa2_detail::load_tile_async<T, kD, kBN>(v_s, v + j0 * p.v_row_stride, p.v_row_stride, keys, tid);
  }
  tc::cp_async_commit_group();

  auto& m_row = st.m;
  auto& l_row = st.l;
  auto& o_acc = st.o;
  TS_UNROLL
  for (int f = 0; f < kMFrags; ++f) {
    TS_UNROLL
    for (int h = 0; h < 2; ++h) {
      m_row[f][h] = device::kNegInf;
      l_row[f][h] = 0.0f;
    }
    TS_UNROLL
    for (int n = 0; n < kOTiles; ++n)
      TS_UNROLL
      for (int i = 0; i < 4; ++i) o_acc[f][n][i] = 0.0f;
  }
  // Lane l of an ldmatrix x4 addresses row l & 7 of matrix l >> 3. Q's A fragments: matrices
  // (rows 0-7 | 8-15) x (columns 0-7 | 8-15) of the k-step, in the order a0..a3 takes them.
  const int ld_row = lane & 7, ld_m = lane >> 3;
  const int q_row = warp_row0 + ld_row + (ld_m & 1) * 8;  // in row block 0; block f is 16 f below
  uint32_t q_frag[kQInRegisters ? kMFrags : 1][kQInRegisters ? kKSteps : 1][4];
  if constexpr (kQInRegisters) {
    tc::cp_async_wait_group<1>();  // Q (the kv tile may still be in flight)
    __syncthreads();
    TS_UNROLL
    for (int f = 0; f < kMFrags; ++f)
      TS_UNROLL
      for (int kk = 0; kk < kKSteps; ++kk)
        tc::ldmatrix<4>(q_frag[f][kk], q_s + swizzled<kD>(q_row + 16 * f, kk * 2 + (ld_m >> 1)));
  }

  // The kv loop. The traced block (FA-2's recording kernel; Split-K 2's traced build, one kernel)
  // compiles it twice, with the step events for a block that records them and without for a
  // block that records other stages only (FA-2's final; Split-K 2's partial): such a block pays a
  // block-uniform branch, not the events' code inside the loop. (A traced FA-2 block that records
  // nothing runs the plain build's code, in the other kernel: fa2_forward_kernel.) One loop in the
  // plain and faulty builds.
  auto kv_loop = [&](auto record_steps) {
    for (int t = visited.begin; t < visited.end; ++t) {
      const int buf = (t - visited.begin) & 1;
      const T* const k_t = k_s + buf * kTile;
      const T* const v_t = v_s + buf * kTile;
      // Tile t landed (this thread's copies), and after the barrier everyone's; every warp has
      // also finished tile t - 1, whose buffers the next loads overwrite.
      tc::cp_async_wait_group<0>();
      __syncthreads();
      if (t + 1 < visited.end) {
        const int64_t j1 = static_cast<int64_t>(t + 1) * kBN;
        const int keys = static_cast<int>(p.seq_kv - j1 < kBN ? p.seq_kv - j1 : kBN);
        T* const k_n = k_s + (buf ^ 1) * kTile;
        T* const v_n = v_s + (buf ^ 1) * kTile;
        fa2_detail::load_tile_async<T, kD, kBN>(k_n, k + j1 * p.k_row_stride, p.k_row_stride, keys, tid);
        fa2_detail::load_tile_async<T, kD, kBN>(v_n, v + j1 * p.v_row_stride, p.v_row_stride, keys, tid);
      }
      tc::cp_async_commit_group();

      // 2. S = Q K^T for the warp's rows x 64 keys: each K fragment feeds every row block.
      float s[kMFrags][kSTiles][4];
      TS_UNROLL
      for (int f = 0; f < kMFrags; ++f)
        TS_UNROLL
        for (int n = 0; n < kSTiles; ++n)
          TS_UNROLL
          for (int i = 0; i < 4; ++i) s[f][n][i] = 0.0f;
      TS_UNROLL
      for (int kk = 0; kk < kKSteps; ++kk) {
        uint32_t a[kMFrags][4];
        TS_UNROLL
        for (int f = 0; f < kMFrags; ++f) {
          if constexpr (kQInRegisters) {
            TS_UNROLL
            for (int i = 0; i < 4; ++i) a[f][i] = q_frag[f][kk][i];
          } else {
            tc::ldmatrix<4>(a[f], q_s + swizzled<kD>(q_row + 16 * f, kk * 2 + (ld_m >> 1)));
          }
        }
        TS_UNROLL
        for (int np = 0; np < kSTiles / 2; ++np) {
          // Keys np*16 + (0-7 | 8-15) x columns (0-7 | 8-15): b0, b1 of n-tile 2np, then of 2np+1.
          uint32_t b[4];
          tc::ldmatrix<4>(b, k_t + swizzled<kD>(np * 16 + ld_row + (ld_m >> 1) * 8, kk * 2 + (ld_m & 1)));
          TS_UNROLL
          for (int f = 0; f < kMFrags; ++f) {
            device::mma(s[f][2 * np], a[f], b[0], b[1], T{});
            device::mma(s[f][2 * np + 1], a[f], b[2], b[3], T{});
          }
        }
      }

      // Softcap and mask: masked scores -inf. s holds raw q . k without a softcap (the scale is
      // folded into the exponent), scaled and capped scores with one. A tile inside all of the
      // lane's rows' spans (every tile but those at a mask's edges) needs no per-key test: the
      // tests were the integer work that bounded the kernel, more than its mma.
      const int64_t j0 = static_cast<int64_t>(t) * kBN;
      if (softcap) {
        TS_UNROLL
        for (int f = 0; f < kMFrags; ++f)
          TS_UNROLL
          for (int n = 0; n < kSTiles; ++n)
            TS_UNROLL
            for (int i = 0; i < 4; ++i)
              s[f][n][i] = device::softcap_score(s[f][n][i] * p.scale, p.softcap, p.softcap_inv);
      }
      if (!(all_rows_see.begin <= j0 && j0 + kBN <= all_rows_see.end)) {
        TS_UNROLL
        for (int f = 0; f < kMFrags; ++f)
          TS_UNROLL
          for (int h = 0; h < 2; ++h) {
            // The row's span in key offsets within the tile, clamped to [0, kBN]: 32-bit tests.
            const KeySpan span = p.mask.row_keys(q0 + row_of(f, h));
            const int64_t lo64 = span.begin - j0, hi64 = span.end - j0;
            const int lo = lo64 < 0 ? 0 : lo64 > kBN ? kBN : static_cast<int>(lo64);
            const int hi = hi64 < 0 ? 0 : hi64 > kBN ? kBN : static_cast<int>(hi64);
            TS_UNROLL
            for (int n = 0; n < kSTiles; ++n)
              TS_UNROLL
              for (int e = 0; e < 2; ++e) {
                const int key = n * 8 + quad_lane * 2 + e;
                if (key < lo || key >= hi) s[f][n][2 * h + e] = device::kNegInf;
              }
          }
      }

      // 3. Online softmax per row; the quad's four lanes hold a row's 64 keys between them.
      const tilescope::Event step_event =
          decltype(record_steps)::value ? probe.open(p.trace, events.stage, t - visited.begin) : tilescope::Event{};
      float alpha[kMFrags][2];
      TS_UNROLL
      for (int f = 0; f < kMFrags; ++f)
        TS_UNROLL
        for (int h = 0; h < 2; ++h) {
          float tile_max = device::kNegInf;
          TS_UNROLL
          for (int n = 0; n < kSTiles; ++n) tile_max = fmaxf(tile_max, fmaxf(s[f][n][2 * h], s[f][n][2 * h + 1]));
          tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
          tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
          tile_max *= to_scaled;  // scaled units, as m is kept (monotonic: max of scaled = scaled max)
          const float m_old = m_row[f][h];
          float m_new, shift;
          if (per_tile_softmax) {
            // The bug: the tile's own max, and the old state kept as is (alpha = 1).
            m_new = tile_max == device::kNegInf ? m_old : tile_max;
            shift = device::softmax_shift(tile_max, true);
            alpha[f][h] = 1.0f;
          } else {
            m_new = fmaxf(m_old, tile_max);
            shift = device::softmax_shift(m_new, guard);
            alpha[f][h] = fa2_detail::fast_exp2((m_old - shift) * fa2_detail::kLog2e);
          }
          const float neg_shift2 = -shift * fa2_detail::kLog2e;
          float sum = 0.0f;
          TS_UNROLL
          for (int n = 0; n < kSTiles; ++n)
            TS_UNROLL
            for (int e = 0; e < 2; ++e) {
              const float pe = fa2_detail::fast_exp2(fmaf(s[f][n][2 * h + e], exp2_factor, neg_shift2));
              s[f][n][2 * h + e] = pe;
              sum += pe;
            }
          sum += __shfl_xor_sync(0xffffffffu, sum, 1);
          sum += __shfl_xor_sync(0xffffffffu, sum, 2);
          m_row[f][h] = m_new;
          l_row[f][h] = l_row[f][h] * alpha[f][h] + sum;
        }

      // 4. O = alpha O + P V. P's C fragments of n-tiles 2kk and 2kk+1 are the A fragment of
      // k-step kk (rounded to the input dtype); V's matrices keys (0-7 | 8-15) x columns (0-7 |
      // 8-15), transposed, give b0, b1 of two column tiles, for every row block.
      TS_UNROLL
      for (int f = 0; f < kMFrags; ++f)
        TS_UNROLL
        for (int n = 0; n < kOTiles; ++n) {
          o_acc[f][n][0] *= alpha[f][0];
          o_acc[f][n][1] *= alpha[f][0];
          o_acc[f][n][2] *= alpha[f][1];
          o_acc[f][n][3] *= alpha[f][1];
        }
      uint32_t p_frag[kMFrags][kPSteps][4];  // packed once: half the registers of P in float
      TS_UNROLL
      for (int f = 0; f < kMFrags; ++f)
        TS_UNROLL
        for (int kk = 0; kk < kPSteps; ++kk) {
          p_frag[f][kk][0] = device::pack<T>(s[f][2 * kk][0], s[f][2 * kk][1]);
          p_frag[f][kk][1] = device::pack<T>(s[f][2 * kk][2], s[f][2 * kk][3]);
          p_frag[f][kk][2] = device::pack<T>(s[f][2 * kk + 1][0], s[f][2 * kk + 1][1]);
          p_frag[f][kk][3] = device::pack<T>(s[f][2 * kk + 1][2], s[f][2 * kk + 1][3]);
        }
      auto v_fragments = [&](int kk, int dp, uint32_t (&b)[4]) {
        tc::ldmatrix_trans<4>(b, v_t + swizzled<kD>(kk * 16 + ld_row + (ld_m & 1) * 8, dp * 2 + (ld_m >> 1)));
      };
      if constexpr (!Traits::kFaulty) {
        TS_UNROLL
        for (int kk = 0; kk < kPSteps; ++kk) {
          TS_UNROLL
          for (int dp = 0; dp < kOTiles / 2; ++dp) {
            uint32_t b[4];
            v_fragments(kk, dp, b);
            TS_UNROLL
            for (int f = 0; f < kMFrags; ++f) {
              device::mma(o_acc[f][2 * dp], p_frag[f][kk], b[0], b[1], T{});
              device::mma(o_acc[f][2 * dp + 1], p_frag[f][kk], b[2], b[3], T{});
            }
          }
        }
      } else {
        // The tile's product kept apart, then added: stale_accumulator does not clear it.
        const bool clear = !stale || t == visited.begin;
        auto pv_at = [&](int f, int n, int i) -> float& {
          return pv_s[((f * kOTiles + n) * 4 + i) * kKernelThreads + tid];
        };
        TS_UNROLL
        for (int dp = 0; dp < kOTiles / 2; ++dp) {
          float pv[kMFrags][2][4];
          TS_UNROLL
          for (int f = 0; f < kMFrags; ++f)
            TS_UNROLL
            for (int e = 0; e < 2; ++e)
              TS_UNROLL
              for (int i = 0; i < 4; ++i) pv[f][e][i] = clear ? 0.0f : pv_at(f, 2 * dp + e, i);
          TS_UNROLL
          for (int kk = 0; kk < kPSteps; ++kk) {
            uint32_t b[4];
            v_fragments(kk, dp, b);
            TS_UNROLL
            for (int f = 0; f < kMFrags; ++f) {
              device::mma(pv[f][0], p_frag[f][kk], b[0], b[1], T{});
              device::mma(pv[f][1], p_frag[f][kk], b[2], b[3], T{});
            }
          }
          TS_UNROLL
          for (int f = 0; f < kMFrags; ++f)
            TS_UNROLL
            for (int e = 0; e < 2; ++e)
              TS_UNROLL
              for (int i = 0; i < 4; ++i) {
                pv_at(f, 2 * dp + e, i) = pv[f][e][i];
                o_acc[f][2 * dp + e][i] += pv[f][e][i];
              }
        }
      }

      if (step_event) {
        TS_UNROLL
        for (int f = 0; f < kMFrags; ++f)
          TS_UNROLL
          for (int h = 0; h < 2; ++h) {
            const int r = row_of(f, h);
            if (r < rows) {
              if (quad_lane == 0) {
                step_event.m()[r] = m_row[f][h];
                step_event.l()[r] = l_row[f][h];
              }
              float* out = step_event.o_row(r);
              TS_UNROLL
              for (int n = 0; n < kOTiles; ++n) {
                out[n * 8 + quad_lane * 2] = o_acc[f][n][2 * h];
                out[n * 8 + quad_lane * 2 + 1] = o_acc[f][n][2 * h + 1];
              }
            }
          }
        if (tid == 0)
          step_event.commit(device::state_header(events.stage, 0, batch, head, kv_head, q0, rows,
                                                 events.key_begin, device::tile_key(t + 1, kBN, p.seq_kv),
                                                 events.split, t - visited.begin, block));
      }
    }
  };
  if constexpr (Traits::kTrace && !Traits::kFaulty) {
    if (probe.wants(events.stage)) kv_loop(std::true_type{});
    else kv_loop(std::false_type{});
  } else {
    kv_loop(std::bool_constant<Traits::kTrace>{});
  }
  tc::cp_async_wait_all();  // a block that visits no tile still has its Q copies in flight
}

// One block's work (the kernel's, below); `p` is the kernel's __grid_constant__ parameter, taken
// by reference without a copy to local memory.
template <typename T, int kD, KernelVariant kVariant>
__device__ __forceinline__ void forward_block(const AttentionParams& p) {
  using Traits = device::VariantTraits<kVariant>;
  using Shape = WarpShape<kD>;
  constexpr int kBM = Shape::kBM;
  TS_DYNAMIC_SHARED(T, smem);
  const int tid = static_cast<int>(threadIdx.x);
  const int quad_lane = tid & 3;
  const int q_tile = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  const int batch = static_cast<int>(blockIdx.z);
  const int rows = rows_in_q_tile(p.seq_q, kBM, q_tile);
  const int64_t q0 = static_cast<int64_t>(q_tile) * kBM;
  const int kv_head = kv_head_of<int>(head, p.heads, p.heads_kv);
  const int64_t block = device::block_linear_index();
  const tilescope::BlockProbe<Traits::kTrace> probe(p.trace, block);
  const bool guard = !Traits::has(p, Fault::masked_nan);
  const bool exchange_rows = Traits::has(p, Fault::fragment_rows);

  const KvTileRange visited = visible_kv_tiles(p.mask, kBM, kFa2BlockN, q_tile);
  fa2_detail::RowState<kD> st;
  fa2_detail::attend_kv_tiles<T, kD, kVariant>(p, smem, q_tile, head, batch, visited,
                                               {kFa2StepStage, -1, 0}, st);

  // Final output: O / l in the input dtype (two columns per 32-bit store), LSE in float32.
  const tilescope::Event final_event = probe.open(p.trace, kFa2FinalStage, 0);
  T* o = static_cast<T*>(p.o) + batch * p.o_batch_stride + head * p.o_head_stride;
  const int64_t lse_row0 = (static_cast<int64_t>(batch) * p.heads + head) * p.seq_q + q0;
  TS_UNROLL
  for (int f = 0; f < Shape::kMFrags; ++f)
    TS_UNROLL
    for (int h = 0; h < 2; ++h) {
      // fragment_rows: the values of half h are stored to the other half's row of the row block.
      const int r = fa2_detail::row_of<kD>(tid, f, exchange_rows ? 1 - h : h);
      if (r < rows) {
        T* orow = o + (q0 + r) * p.o_row_stride;
        TS_UNROLL
        for (int n = 0; n < Shape::kOTiles; ++n) {
          const int c = n * 8 + quad_lane * 2;
          const T lo = device::from_float<T>(device::normalise(st.o[f][n][2 * h], st.l[f][h], guard));
          const T hi = device::from_float<T>(device::normalise(st.o[f][n][2 * h + 1], st.l[f][h], guard));
          device::store_word(orow + c, tc::pack_halves(lo, hi));
          if (final_event) {
            final_event.o_row(r)[c] = device::to_float(lo);
            final_event.o_row(r)[c + 1] = device::to_float(hi);
          }
        }
      }
      const int lse_r = fa2_detail::row_of<kD>(tid, f, h);
      if (lse_r < rows && quad_lane == 0) {
        const float lse = device::log_sum_exp(st.m[f][h], st.l[f][h], guard);
        p.lse[lse_row0 + lse_r] = lse;
        if (final_event) {
          final_event.m()[lse_r] = lse;
          final_event.l()[lse_r] = 1.0f;
        }
      }
    }
  if (final_event && tid == 0)
    final_event.commit(device::state_header(kFa2FinalStage, tilescope::kNormalized, batch, head,
                                            kv_head, q0, rows, 0, p.seq_kv, -1, visited.size(), block));
}

}  // namespace fa2_detail

// The traced build is two kernels over the same grid, which a traced launch runs side by side
// (kernels/kernel_registry.h, find_recording_kernel): this one's traced entry, whose blocks that
// record nothing run the plain build's code and whose others return at once, and
// fa2_recording_blocks_kernel, below, the other way round. ptxas allocates registers and
// schedules a kernel as a whole: with the events' code in the same kernel as the plain path,
// inline or behind a call, the plain path came out scheduled otherwise than the plain kernel, and
// the traced build with nothing recorded ran 1.7-2.4% slower than the plain one on an H100; the
// block test alone, in a kernel that holds only the plain path, costs nothing measurable
// (docs/perf.md, "The traced build as two kernels").
template <typename T, int kD, KernelVariant kVariant>
__global__ void __launch_bounds__(kKernelThreads, fa2_detail::kMinBlocksPerSm<kD>)
    fa2_forward_kernel(const __grid_constant__ AttentionParams p) {
  if constexpr (kVariant == KernelVariant::traced) {
    if (device::block_records_any(p, kFa2StepStage, kFa2FinalStage)) return;
    fa2_detail::forward_block<T, kD, KernelVariant::plain>(p);
  } else {
    fa2_detail::forward_block<T, kD, kVariant>(p);
  }
}

// The traced build's blocks that record an event (the traced entry above runs the others).
template <typename T, int kD>
__global__ void __launch_bounds__(kKernelThreads, fa2_detail::kMinBlocksPerSm<kD>)
    fa2_recording_blocks_kernel(const __grid_constant__ AttentionParams p) {
  if (!device::block_records_any(p, kFa2StepStage, kFa2FinalStage)) return;
  fa2_detail::forward_block<T, kD, KernelVariant::traced>(p);
}

}  // namespace ts
