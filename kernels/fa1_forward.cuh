// FA-1 forward: one pass of attention with online softmax (FlashAttention's first algorithm).
//
// What it computes: for every (batch, query head h) and query row i, with K and V of kv head
// h / (heads / heads_kv) (GQA; MQA with one kv head, MHA with as many as heads),
//   s_ij = scale * q_i . k_j,  then s_ij = softcap * tanh(s_ij / softcap) when softcap > 0,
//   O[i] = softmax_j(s_ij over the keys row i sees) V,   LSE[i] = log sum_j exp(s_ij),
// where row i sees key j when j < seq_kv, j <= d when causal, and d - window_left <= j <=
// d + window_right (a bound of -1: none), with d = i + seq_kv - seq_q (bottom-right diagonal):
// base/attention_spec.h's semantics, its mask rule read from base/attention_rules.h through
// KernelMask (kernels/tile_shapes.h). A row that sees no key gets O = 0 and LSE = -inf. Inputs
// fp32 / fp16 / bf16, fp32 arithmetic.
//
// How: one block of 128 threads per (query tile of block_m rows, query head, batch); grid
// (num_q_tiles, heads, batch). The block keeps Q in shared memory and walks the kv tiles its
// rows can see (visible_kv_tiles: tiles wholly outside the causal limit or the window are
// skipped), each in four phases separated by barriers:
//   1. load the K and V tile into shared memory (float, zero past seq_kv);
//   2. S = Q K^T, a 4x8 (or 2x4) register tile per thread, softcapped (one uniform branch per
//      tile: the MHA path without softcap pays nothing else), masked entries -inf;
//   3. online softmax per row (2 or 4 threads a row): new max m, P = exp(S - m), l, and the
//      factor alpha = exp(m_old - m) that rescales the previous state;
//   4. O = alpha * O + P V, a register tile of rows x columns per thread;
// then O / l and LSE are written. No tensor cores: the same source runs on the CPU SIMT
// runtime, and the state after every step is what the probes record.
//
// Variants (template KernelVariant): plain (no probes), traced (probes, kernels/kernel_stages.h:
// an `fa1.step` event after every kv tile it visits holding the unnormalised m, l, O over keys
// [0, end of that tile), and a `final` event with LSE and the output as written; events name
// the kv head read; two kernels, fa1_forward_kernel below says how), faulty (probes + the fault
// in params.fault):
//   masked_nan        no guard when a row has seen no key yet: exp(-inf - -inf) = NaN
//                     (rows that see no key at all, seq_q > seq_kv under causal masking, or rows
//                     whose window starts past their query tile's first visited tile);
//   per_tile_softmax  no online rescaling: each tile's exponents use that tile's own max
//                     and the previous state is never rescaled; right after one tile only;
//   stale_accumulator the P V accumulator of a tile is not cleared before the next tile;
//   missing_barrier   no barrier between the last reads of a K/V tile and the loads of the
//                     next one over it (write-after-read race).
//
// Run it: `tilescope capture --kernel fa1 [--heads 32 --heads-kv 8] [--causal] [--window L,R]
// [--softcap X] ...`, or ts::launch_attention (kernels/launcher.h) with config.kernel =
// KernelKind::fa1; tests in tests/kernels/.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "kernels/device/unroll.cuh"
#include "tilescope/probe.h"
#include "kernels/attention_params.h"
#include "kernels/device/block_records.cuh"
#include "kernels/device/kernel_traits.cuh"
#include "kernels/device/smem_vec.cuh"
#include "kernels/device/softmax_math.cuh"
#include "kernels/device/tile_loader.cuh"
#include "kernels/device/vec_io.cuh"
#include "kernels/kernel_smem.h"
#include "kernels/tile_shapes.h"

namespace ts {

namespace fa1_detail {

// The faulty build's second accumulator for stale_accumulator (P V of the tile, kept apart
// so that it can fail to be cleared); the correct builds hold nothing.
template <bool kFaulty, int kRows, int kCols>
struct TileProduct {
  __device__ __forceinline__ void clear() {}
  __device__ __forceinline__ float& at(int, int) { return dummy; }
  float dummy;
};
template <int kRows, int kCols>
struct TileProduct<true, kRows, kCols> {
  __device__ __forceinline__ void clear() {
    TS_UNROLL
    for (int i = 0; i < kRows; ++i)
      TS_UNROLL
      for (int c = 0; c < kCols; ++c) v[i][c] = 0.0f;
  }
  __device__ __forceinline__ float& at(int i, int c) { return v[i][c]; }
  float v[kRows][kCols];
};

}  // namespace fa1_detail

// The traced build is two kernels, as FA-2's is (fa2_forward.cuh's fa2_forward_kernel says why;
// here, with the events inline, the traced build with nothing recorded ran 6-8% slower than the
// plain one on an H100): fa1_forward_kernel<T, kD, traced> runs the blocks that record nothing,
// with the plain build's code, and fa1_forward_kernel<T, kD, traced, true> (kRecording) the
// others, with the traced build's.
template <typename T, int kD, KernelVariant kVariant, bool kRecording = false>
__global__ void __launch_bounds__(kKernelThreads) fa1_forward_kernel(const AttentionParams p) {
  static_assert(!kRecording || kVariant == KernelVariant::traced, "only the traced build has a recording kernel");
  if constexpr (kVariant == KernelVariant::traced) {
    if (device::block_records_any(p, kFa1StepStage, kFa1FinalStage) != kRecording) return;
  }
  using Traits = device::VariantTraits<kVariant == KernelVariant::traced && !kRecording ? KernelVariant::plain : kVariant>;
  constexpr int kBM = fa1_block_m(kD);
  constexpr int kBN = fa1_block_n(kD);
  constexpr int kLD = qkv_tile_ld(kD);
  constexpr int kLS = score_tile_ld(kBN);
  // Register tiles: threads as 16 rows x 8 columns of the block's tiles.
  constexpr int kTY = 16, kTX = 8;
  constexpr int kMR = kBM / kTY;  // query rows per thread: ty + 16 i
  constexpr int kNS = kBN / kTX;  // keys per thread in S: tx + 8 k
  constexpr int kNO = kD / kTX;   // output columns per thread: 4 at tx*4 + 32 k
  constexpr int kRowThreads = kKernelThreads / kBM;  // softmax threads per row
  static_assert(kMR * kTY == kBM && kNS * kTX == kBN && kNO % 4 == 0, "tile shape");
  static_assert(kRowThreads * kBM == kKernelThreads && kRowThreads <= 32, "softmax mapping");

  TS_DYNAMIC_SHARED(float, smem);
  float* q_s = smem;
  float* k_s = q_s + kBM * kLD;
  float* v_s = k_s + kBN * kLD;
  float* s_s = v_s + kBN * kLD;
  float* m_s = s_s + kBM * kLS;
  float* l_s = m_s + kBM;
  float* alpha_s = l_s + kBM;

  const int tid = static_cast<int>(threadIdx.x);
  const int ty = tid / kTX, tx = tid % kTX;
  const int q_tile = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  const int batch = static_cast<int>(blockIdx.z);
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
  const bool keep_war_barrier = !Traits::has(p, Fault::missing_barrier);

  // Q tile, pre-multiplied by the softmax scale; rows past seq_q are zeros.
  device::load_tile<T, kD, kBM, kKernelThreads, kLD>(q, p.q_row_stride, rows, q_s, tid, p.scale);
  for (int r = tid; r < kBM; r += kKernelThreads) {
    m_s[r] = device::kNegInf;
    l_s[r] = 0.0f;
  }
  __syncthreads();

  float o_acc[kMR][kNO];
  TS_UNROLL
  for (int i = 0; i < kMR; ++i)
    TS_UNROLL
    for (int c = 0; c < kNO; ++c) o_acc[i][c] = 0.0f;
  fa1_detail::TileProduct<Traits::kFaulty, kMR, kNO> tile_pv;
  tile_pv.clear();

  // The kv tiles some row of this query tile sees; the others are skipped.
  const KvTileRange visited = visible_kv_tiles(p.mask, kBM, kBN, q_tile);
  const bool softcap = p.softcap > 0.0f;

  for (int t = visited.begin; t < visited.end; ++t) {
    // 1. K and V tile.
    const int64_t j0 = static_cast<int64_t>(t) * kBN;
    const int keys = static_cast<int>(p.seq_kv - j0 < kBN ? p.seq_kv - j0 : kBN);
    device::load_tile<T, kD, kBN, kKernelThreads, kLD>(k + j0 * p.k_row_stride, p.k_row_stride,
                                                       keys, k_s, tid);
    device::load_tile<T, kD, kBN, kKernelThreads, kLD>(v + j0 * p.v_row_stride, p.v_row_stride,
                                                       keys, v_s, tid);
    __syncthreads();

    // 2. S = Q K^T on this thread's rows ty + 16 i and keys tx + 8 k.
    {
      float s_acc[kMR][kNS];
      TS_UNROLL
      for (int i = 0; i < kMR; ++i)
        TS_UNROLL
        for (int n = 0; n < kNS; ++n) s_acc[i][n] = 0.0f;
      TS_UNROLL_N(4)
      for (int c = 0; c < kD; c += 4) {
        float4 qv[kMR], kv[kNS];
        TS_UNROLL
        for (int i = 0; i < kMR; ++i) qv[i] = device::load_f4(q_s + (ty + kTY * i) * kLD + c);
        TS_UNROLL
        for (int n = 0; n < kNS; ++n) kv[n] = device::load_f4(k_s + (tx + kTX * n) * kLD + c);
        TS_UNROLL
        for (int i = 0; i < kMR; ++i)
          TS_UNROLL
          for (int n = 0; n < kNS; ++n) s_acc[i][n] = device::dot4(qv[i], kv[n], s_acc[i][n]);
      }
      if (softcap) {  // uniform: the plain scores pay one branch per tile
        TS_UNROLL
        for (int i = 0; i < kMR; ++i)
          TS_UNROLL
          for (int n = 0; n < kNS; ++n) s_acc[i][n] = device::softcap_score(s_acc[i][n], p.softcap, p.softcap_inv);
      }
      TS_UNROLL
      for (int i = 0; i < kMR; ++i) {
        const int r = ty + kTY * i;
        const KeySpan row_keys = p.mask.row_keys(q0 + r);  // past seq_kv, causal, window
        TS_UNROLL
        for (int n = 0; n < kNS; ++n) {
          const int64_t key = j0 + tx + kTX * n;
          const bool masked = key < row_keys.begin || key >= row_keys.end;
          s_s[r * kLS + tx + kTX * n] = masked ? device::kNegInf : s_acc[i][n];
        }
      }
    }
    __syncthreads();

    // 3. Online softmax: kRowThreads threads per row, columns part, part + kRowThreads, ...
    const tilescope::Event step_event = probe.open(p.trace, kFa1StepStage, t - visited.begin);
    {
      const int r = tid / kRowThreads, part = tid % kRowThreads;
      float* srow = s_s + r * kLS;
      // Read the row's state before the shuffles: part 0 overwrites it after them.
      const float m_old = m_s[r], l_old = l_s[r];
      float tile_max = device::kNegInf;
      for (int j = part; j < kBN; j += kRowThreads) tile_max = fmaxf(tile_max, srow[j]);
      TS_UNROLL
      for (int off = kRowThreads / 2; off > 0; off /= 2)
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off, kRowThreads));
      float m_new, shift, alpha;
      if (per_tile_softmax) {
        // The bug: the tile's own max, and the old state kept as is (alpha = 1).
        m_new = tile_max == device::kNegInf ? m_old : tile_max;
        shift = device::softmax_shift(tile_max, true);
        alpha = 1.0f;
      } else {
        m_new = fmaxf(m_old, tile_max);
        shift = device::softmax_shift(m_new, guard);
        alpha = expf(m_old - shift);
      }
      float sum = 0.0f;
      for (int j = part; j < kBN; j += kRowThreads) {
        const float e = expf(srow[j] - shift);
        srow[j] = e;
        sum += e;
      }
      TS_UNROLL
      for (int off = kRowThreads / 2; off > 0; off /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, off, kRowThreads);
      const float l_new = l_old * alpha + sum;
      __syncwarp();  // every part has read m_s[r], l_s[r] before part 0 overwrites them
      if (part == 0) {
        m_s[r] = m_new;
        l_s[r] = l_new;
        alpha_s[r] = alpha;
        if (step_event && r < rows) {
          step_event.m()[r] = m_new;
          step_event.l()[r] = l_new;
        }
      }
    }
    __syncthreads();

    // 4. O = alpha * O + P V on this thread's rows and columns tx*4 + 32 k4 + e.
    {
      float pv[kMR][kNO];
      TS_UNROLL
      for (int i = 0; i < kMR; ++i)
        TS_UNROLL
        for (int c = 0; c < kNO; ++c) pv[i][c] = 0.0f;
      TS_UNROLL_N(2)
      for (int j = 0; j < kBN; ++j) {
        float pj[kMR];
        TS_UNROLL
        for (int i = 0; i < kMR; ++i) pj[i] = s_s[(ty + kTY * i) * kLS + j];
        TS_UNROLL
        for (int c4 = 0; c4 < kNO / 4; ++c4) {
          const float4 vv = device::load_f4(v_s + j * kLD + tx * 4 + 32 * c4);
          TS_UNROLL
          for (int i = 0; i < kMR; ++i) {
            pv[i][4 * c4 + 0] = pj[i] * vv.x + pv[i][4 * c4 + 0];
            pv[i][4 * c4 + 1] = pj[i] * vv.y + pv[i][4 * c4 + 1];
            pv[i][4 * c4 + 2] = pj[i] * vv.z + pv[i][4 * c4 + 2];
            pv[i][4 * c4 + 3] = pj[i] * vv.w + pv[i][4 * c4 + 3];
          }
        }
      }
      TS_UNROLL
      for (int i = 0; i < kMR; ++i) {
        const float alpha = alpha_s[ty + kTY * i];
        TS_UNROLL
        for (int c = 0; c < kNO; ++c) {
          float add = pv[i][c];
          if constexpr (Traits::kFaulty) {
            // stale_accumulator: the tile's product accumulates onto the previous tiles'.
            if (!stale) tile_pv.at(i, c) = 0.0f;
            tile_pv.at(i, c) += pv[i][c];
            add = tile_pv.at(i, c);
          }
          o_acc[i][c] = o_acc[i][c] * alpha + add;
        }
      }
    }
    if (step_event) {
      TS_UNROLL
      for (int i = 0; i < kMR; ++i) {
        const int r = ty + kTY * i;
        if (r < rows) {
          float* out = step_event.o_row(r);
          TS_UNROLL
          for (int c4 = 0; c4 < kNO / 4; ++c4)
            TS_UNROLL
            for (int e = 0; e < 4; ++e) out[tx * 4 + 32 * c4 + e] = o_acc[i][4 * c4 + e];
        }
      }
      if (tid == 0)
        step_event.commit(device::state_header(kFa1StepStage, 0, batch, head, kv_head, q0, rows, 0,
                                               device::tile_key(t + 1, kBN, p.seq_kv), -1,
                                               t - visited.begin, block));
    }
    // The K/V tiles are overwritten by the next iteration's loads: wait for every reader.
    if (keep_war_barrier) __syncthreads();
  }

  // Final output: O / l in the input dtype, LSE in float32.
  const tilescope::Event final_event = probe.open(p.trace, kFa1FinalStage, 0);
  T* o = static_cast<T*>(p.o) + batch * p.o_batch_stride + head * p.o_head_stride;
  TS_UNROLL
  for (int i = 0; i < kMR; ++i) {
    const int r = ty + kTY * i;
    if (r < rows) {
      const float l = l_s[r];
      T* orow = o + (q0 + r) * p.o_row_stride;
      TS_UNROLL
      for (int c4 = 0; c4 < kNO / 4; ++c4)
        TS_UNROLL
        for (int e = 0; e < 4; ++e) {
          const int c = tx * 4 + 32 * c4 + e;
          const T out = device::from_float<T>(device::normalise(o_acc[i][4 * c4 + e], l, guard));
          orow[c] = out;
          if (final_event) final_event.o_row(r)[c] = device::to_float(out);
        }
    }
  }
  const int64_t lse_row0 = (static_cast<int64_t>(batch) * p.heads + head) * p.seq_q + q0;
  for (int r = tid; r < rows; r += kKernelThreads) {
    const float lse = device::log_sum_exp(m_s[r], l_s[r], guard);
    p.lse[lse_row0 + r] = lse;
    if (final_event) {
      final_event.m()[r] = lse;
      final_event.l()[r] = 1.0f;
    }
  }
  if (final_event && tid == 0)
    final_event.commit(device::state_header(kFa1FinalStage, tilescope::kNormalized, batch, head,
                                            kv_head, q0, rows, 0, p.seq_kv, -1, visited.size(), block));
}

}  // namespace ts
