// Split-K (flash-decoding) partial pass: each split of the kv tiles computes its own
// unnormalised attention state, which splitk_reduce.cuh then merges.
//
// What it computes: for every (batch, query head h), query row i and split s (kv tiles
// [s * per_split, (s + 1) * per_split) clipped to the run), with K and V of kv head
// h / (heads / heads_kv) (GQA/MQA), over the keys j of the split that row i sees:
//   s_j = scale * q_i . k_j,  then s_j = softcap * tanh(s_j / softcap) when softcap > 0,
//   m = max_j s_j,   l = sum_j exp(s_j - m),   O = sum_j exp(s_j - m) v_j   (NOT divided by l)
// into float32 partial buffers laid out [batch, heads, seq_q, num_splits, (head_dim)]. Row i
// sees key j when j < seq_kv, j <= d when causal, d - window_left <= j <= d + window_right (-1:
// unbounded), d = i + seq_kv - seq_q: base/attention_spec.h's semantics, the rule itself read
// from base/attention_rules.h through KernelMask (kernels/tile_shapes.h). A split that sees no
// key (empty, past the causal limit, outside the window) writes m = -inf, l = 0, O = 0.
//
// How: one block of 128 threads per (query tile, split, query head, batch); grid
// (num_q_tiles * num_splits, heads, batch), split fastest. Its kv tiles are those of its split
// that its query tile sees (splitk_visited_tiles: tiles wholly outside the causal limit or the
// window are skipped); each row's visible keys are found once per block, so masking a score
// costs two compares whatever the mask, and the softcap is a uniform branch (not taken without
// one): the multi-head decode path does the same work as before either existed. Designed for the memory-bound
// decode case (seq_q = 1, long kv): a query tile has at most kSplitkMaxBlockM rows and only as
// many as the queries (splitk_block_m, kernels/tile_shapes.h), and work is spread over the valid
// (row, key) and (row, column) pairs only, so a single query row keeps every thread busy
// loading. Each kv tile (splitk_block_n keys: the same number of elements of K and of V whatever
// the head dim) is fetched with 16-byte vector loads,
// consecutive threads on consecutive vectors, into registers one tile ahead: the next tile's
// loads are in flight while the current one is computed. Per tile: S = Q K^T (one
// (row, key) dot product per thread and step), the online softmax (a warp per row), and
// O = alpha * O + P V (one (row, column) per thread and step).
//
// Variants (template KernelVariant): plain (no probes), traced (kernels/kernel_stages.h: with
// params.tile_events a `splitk.tile` event after each kv tile the block visits, the running state
// over the split's keys up to that tile's end; and a `splitk.partial` event per block at the end
// of its split, m, l and unnormalised O over the split's keys as written to the partial buffers;
// events name the kv head read), faulty (probes + the fault in params.fault):
//   masked_nan        the split visits every tile, also those past the causal limit or outside
//                     the window, with no guard for a row that has seen no key:
//                     exp(-inf - -inf) = NaN;
//   empty_split       a split with no kv tile returns without writing its state, so the
//                     reduce reads the launcher's NaN poison;
//   stale_accumulator the P V accumulator of a tile is not cleared before the next tile;
//   missing_barrier   no barrier between the last reads of a K/V tile and the stores of the
//                     next one over it (write-after-read race).
//
// Run it: `tilescope capture --kernel splitk [--heads 32 --heads-kv 8] [--causal] [--window L,R]
// [--softcap X] ...`, or ts::launch_attention (kernels/launcher.h) with config.kernel =
// KernelKind::splitk; tests in tests/kernels/.
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
#include "kernels/kernel_smem.h"
#include "kernels/tile_shapes.h"

namespace ts {

namespace splitk_detail {

// See fa1_forward.cuh: the faulty build's separately kept tile product (stale_accumulator).
template <bool kFaulty, int kN>
struct TileProduct {
  __device__ __forceinline__ float& at(int) { return dummy; }
  float dummy;
};
template <int kN>
struct TileProduct<true, kN> {
  __device__ __forceinline__ float& at(int i) { return v[i]; }
  float v[kN] = {};
};

// A block's coordinates, from its index: computed from blockIdx where the kernel starts, and
// again from EventSite::here() where the traced build writes its event, so that no value of
// the event is held through the main loop (see tilescope/probe.h).
struct PartialBlock {
  int q_tile, split, head, kv_head, batch, rows;
  int64_t q0;
  KvTileRange range;  // the split's kv tiles

  __device__ __forceinline__ static PartialBlock at(const uint3& block_idx,
                                                    const AttentionParams& p) {
    PartialBlock b;
    b.q_tile = static_cast<int>(block_idx.x) / p.num_splits;
    b.split = static_cast<int>(block_idx.x) % p.num_splits;
    b.head = static_cast<int>(block_idx.y);
    b.kv_head = kv_head_of<int>(b.head, p.heads, p.heads_kv);
    b.batch = static_cast<int>(block_idx.z);
    b.rows = rows_in_q_tile(p.seq_q, p.block_m, b.q_tile);
    b.q0 = static_cast<int64_t>(b.q_tile) * p.block_m;
    b.range = split_kv_tile_range(b.split, p.kv_tiles_per_split, p.num_kv_tiles);
    return b;
  }
  // Buffer row of (query q0, this split): one row per (query, split).
  __device__ __forceinline__ int64_t first_buffer_row(const AttentionParams& p) const {
    return ((static_cast<int64_t>(batch) * p.heads + head) * p.seq_q + q0) * p.num_splits + split;
  }
};

// The traced build's `splitk.partial` event, written after the split's state: its payload is
// read back from what each thread has just written (the partial buffers, same thread, same
// elements; m and l from shared memory), so it holds what the reduce will read. Not inlined:
// ptxas allocates a kernel's registers as a whole, and with this code inline it compiled the
// decode kernel's main loop differently (other registers than the plain kernel's, tid re-read
// and sign extensions redone in every kv tile; docs/perf.md, "Instrumented kernels with tracing
// off"). As a call after everything else, the kernel up to
// the call is the plain kernel, instruction for instruction. `p` is the kernel's
// __grid_constant__ parameter: passed by reference without a copy to local memory. `step` is
// the event's place in the block's order: after the block's `splitk.tile` events.
template <int kD>
__device__ __noinline__ void record_split_state(const AttentionParams& p, const float* m_s,
                                                const float* l_s, int step) {
  const tilescope::EventSite site = tilescope::EventSite::here();
  const tilescope::Event event = tilescope::BlockProbe<true>(p.trace, site.block_linear())
                                     .open(p.trace, kSplitkPartialStage, 0);
  if (!event) return;
  const PartialBlock b = PartialBlock::at(site.block, p);
  const int64_t row0 = b.first_buffer_row(p);
  for (int e = site.thread; e < b.rows * kD; e += kKernelThreads) {
    const int r = e / kD, c = e % kD;
    event.o_row(r)[c] = p.partial_o[(row0 + static_cast<int64_t>(r) * p.num_splits) * kD + c];
  }
  for (int r = site.thread; r < b.rows; r += kKernelThreads) {
    event.m()[r] = m_s[r];
    event.l()[r] = l_s[r];
  }
  if (site.thread == 0)
    event.commit(device::state_header(kSplitkPartialStage, 0, b.batch, b.head, b.kv_head, b.q0, b.rows,
                                      device::tile_key(b.range.begin, p.block_n, p.seq_kv),
                                      device::tile_key(b.range.end, p.block_n, p.seq_kv),
                                      b.split, step, site.block_linear()));
}

// The traced build's `splitk.tile` event: the split's running state after kv tile `tile` (the
// `index`-th tile the block visits), m and l from shared memory, O from each thread's
// accumulators (passed by value: an array held by reference would go to local memory).
template <int kD, int kOutSteps>
struct Accumulators {
  float v[kOutSteps];
};
template <int kD, int kOutSteps>
__device__ __noinline__ void record_tile_state(const AttentionParams& p, const float* m_s,
                                               const float* l_s,
                                               const Accumulators<kD, kOutSteps> acc, int tile,
                                               int index) {
  const tilescope::EventSite site = tilescope::EventSite::here();
  const tilescope::Event event = tilescope::BlockProbe<true>(p.trace, site.block_linear())
                                     .open(p.trace, kSplitkTileStage, index);
  if (!event) return;
  const PartialBlock b = PartialBlock::at(site.block, p);
  for (int step = 0; step < kOutSteps; ++step) {
    const int e = site.thread + step * kKernelThreads;
    const int r = e / kD, c = e % kD;
    if (r < b.rows) event.o_row(r)[c] = acc.v[step];
  }
  for (int r = site.thread; r < b.rows; r += kKernelThreads) {
    event.m()[r] = m_s[r];
    event.l()[r] = l_s[r];
  }
  if (site.thread == 0)
    event.commit(device::state_header(kSplitkTileStage, 0, b.batch, b.head, b.kv_head, b.q0, b.rows,
                                      device::tile_key(b.range.begin, p.block_n, p.seq_kv),
                                      device::tile_key(tile + 1, p.block_n, p.seq_kv), b.split,
                                      index, site.block_linear()));
}

// One block's work (the kernel's, below); `p` is the kernel's __grid_constant__ parameter.
template <typename T, int kD, KernelVariant kVariant>
__device__ __forceinline__ void partial_block(const AttentionParams& p) {
  using Traits = device::VariantTraits<kVariant>;
  constexpr int kBM = kSplitkMaxBlockM;  // tile capacity; p.block_m <= kBM rows are used
  constexpr int kBN = splitk_block_n(kD);
  constexpr int kLD = qkv_tile_ld(kD);
  constexpr int kLS = score_tile_ld(kBN);
  constexpr int kLK = raw_tile_ld(kD, static_cast<int>(sizeof(T)));  // K and V rows, elements of T
  constexpr int kWarps = kKernelThreads / 32;
  constexpr int kKeysPerLane = kBN / 32;                     // softmax: a warp per row
  constexpr int kScoreSteps = kBM * kBN / kKernelThreads;    // (row, key) pairs per thread
  constexpr int kOutSteps = kBM * kD / kKernelThreads;       // (row, column) pairs per thread
  static_assert(kKeysPerLane * 32 == kBN && kScoreSteps * kKernelThreads == kBM * kBN &&
                    kOutSteps * kKernelThreads == kBM * kD,
                "tile shape");

  TS_DYNAMIC_SHARED(float, smem);
  float* q_s = smem;
  T* k_s = reinterpret_cast<T*>(q_s + kBM * kLD);  // kernel_smem.h: splitk_partial_smem_bytes
  T* v_s = k_s + kBN * kLK;
  float* s_s = reinterpret_cast<float*>(v_s + kBN * kLK);
  float* m_s = s_s + kBM * kLS;
  float* l_s = m_s + kBM;
  float* alpha_s = l_s + kBM;
  // The keys each query row sees (KernelMask::row_keys: causal, window, seq_kv), found once per
  // block; the score step masks with them. Key indices fit int32 (config: seq_kv <= 2^30).
  int* key_begin_s = reinterpret_cast<int*>(alpha_s + kBM);
  int* key_end_s = key_begin_s + kBM;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const splitk_detail::PartialBlock coords = splitk_detail::PartialBlock::at(blockIdx, p);
  const int q_tile = coords.q_tile, head = coords.head, batch = coords.batch, rows = coords.rows;
  const int64_t q0 = coords.q0;
  const bool guard = !Traits::has(p, Fault::masked_nan);
  const bool stale = Traits::has(p, Fault::stale_accumulator);
  const bool keep_war_barrier = !Traits::has(p, Fault::missing_barrier);

  if (Traits::has(p, Fault::empty_split) && coords.range.empty()) return;  // the bug: state never written
  // The split's tiles that some row of the query tile sees; tiles outside the causal limit or the
  // window hold no visible key and are skipped, unless masked_nan.
  const KvTileRange visited =
      splitk_visited_tiles(coords.range, visible_kv_tiles(p.mask, p.block_m, kBN, q_tile), guard);
  const bool softcap = p.softcap > 0.0f;

  const T* q = static_cast<const T*>(p.q) + batch * p.q_batch_stride + head * p.q_head_stride +
               q0 * p.q_row_stride;
  const T* k = static_cast<const T*>(p.k) + batch * p.k_batch_stride + coords.kv_head * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + batch * p.v_batch_stride + coords.kv_head * p.v_head_stride;

  device::load_tile<T, kD, kBM, kKernelThreads, kLD>(q, p.q_row_stride, rows, q_s, tid, p.scale);
  for (int r = tid; r < kBM; r += kKernelThreads) {
    m_s[r] = device::kNegInf;
    l_s[r] = 0.0f;
    const KeySpan keys = p.mask.row_keys(q0 + r);
    key_begin_s[r] = static_cast<int>(keys.begin);
    key_end_s[r] = static_cast<int>(keys.end);
  }
  __syncthreads();

  float acc[kOutSteps];
  TS_UNROLL
  for (int i = 0; i < kOutSteps; ++i) acc[i] = 0.0f;
  splitk_detail::TileProduct<Traits::kFaulty, kOutSteps> tile_pv;

  auto keys_in = [&](int t) {
    const int64_t left = p.seq_kv - static_cast<int64_t>(t) * kBN;
    return static_cast<int>(left < kBN ? left : kBN);
  };
  device::TileLoader<T, kD, kBN, kKernelThreads> k_next, v_next;
  if (!visited.empty()) {
    const int64_t j0 = static_cast<int64_t>(visited.begin) * kBN;
    k_next.fetch(k + j0 * p.k_row_stride, p.k_row_stride, keys_in(visited.begin), tid);
    v_next.fetch(v + j0 * p.v_row_stride, p.v_row_stride, keys_in(visited.begin), tid);
  }

  for (int t = visited.begin; t < visited.end; ++t) {
    const int64_t j0 = static_cast<int64_t>(t) * kBN;
    k_next.template store_raw<kLK>(k_s, tid);
    v_next.template store_raw<kLK>(v_s, tid);
    __syncthreads();
    if (t + 1 < visited.end) {  // the next tile's loads fly while this one is computed
      const int64_t j1 = j0 + kBN;
      k_next.fetch(k + j1 * p.k_row_stride, p.k_row_stride, keys_in(t + 1), tid);
      v_next.fetch(v + j1 * p.v_row_stride, p.v_row_stride, keys_in(t + 1), tid);
    }

    // S = Q K^T over the valid (row, key) pairs. Not unrolled: the steps share nothing, and
    // unrolling them only raises the register count (occupancy) of the decode case, which
    // uses the first step alone.
    TS_UNROLL_N(1)
    for (int step = 0; step < kScoreSteps; ++step) {
      const int e = tid + step * kKernelThreads;
      const int r = e / kBN, j = e % kBN;
      if (r < rows) {
        // Four independent sums: one chain of head_dim dependent FMAs would make the decode
        // step wait on FMA latency rather than on memory.
        const float* qr = q_s + r * kLD;
        const T* kr = k_s + j * kLK;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        TS_UNROLL_N(2)
        for (int c = 0; c < kD; c += 16) {
          float kf[16];
          device::raw8_to_float(device::load_raw8(kr + c), kf);
          device::raw8_to_float(device::load_raw8(kr + c + 8), kf + 8);
          s0 = device::dot4(device::load_f4(qr + c), make_float4(kf[0], kf[1], kf[2], kf[3]), s0);
          s1 = device::dot4(device::load_f4(qr + c + 4), make_float4(kf[4], kf[5], kf[6], kf[7]), s1);
          s2 = device::dot4(device::load_f4(qr + c + 8), make_float4(kf[8], kf[9], kf[10], kf[11]), s2);
          s3 = device::dot4(device::load_f4(qr + c + 12), make_float4(kf[12], kf[13], kf[14], kf[15]), s3);
        }
        float s = (s0 + s1) + (s2 + s3);
        if (softcap) s = device::softcap_score(s, p.softcap, p.softcap_inv);  // uniform branch
        const int key = static_cast<int>(j0) + j;
        const bool masked = key < key_begin_s[r] || key >= key_end_s[r];
        s_s[r * kLS + j] = masked ? device::kNegInf : s;
      }
    }
    __syncthreads();

    // Online softmax, a warp per row: lanes hold keys lane + 32 x.
    for (int r = warp; r < rows; r += kWarps) {
      float* srow = s_s + r * kLS;
      const float m_old = m_s[r], l_old = l_s[r];
      float sv[kKeysPerLane];
      float tile_max = device::kNegInf;
      TS_UNROLL
      for (int x = 0; x < kKeysPerLane; ++x) {
        sv[x] = srow[lane + 32 * x];
        tile_max = fmaxf(tile_max, sv[x]);
      }
      TS_UNROLL
      for (int off = 16; off > 0; off /= 2)
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
      const float m_new = fmaxf(m_old, tile_max);
      const float shift = device::softmax_shift(m_new, guard);
      const float alpha = expf(m_old - shift);
      float sum = 0.0f;
      TS_UNROLL
      for (int x = 0; x < kKeysPerLane; ++x) {
        const float e = expf(sv[x] - shift);
        srow[lane + 32 * x] = e;
        sum += e;
      }
      TS_UNROLL
      for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      __syncwarp();  // every lane has read m_s[r], l_s[r] before lane 0 overwrites them
      if (lane == 0) {
        m_s[r] = m_new;
        l_s[r] = l_old * alpha + sum;
        alpha_s[r] = alpha;
      }
    }
    __syncthreads();

    // O = alpha * O + P V over the valid (row, column) pairs.
    TS_UNROLL
    for (int step = 0; step < kOutSteps; ++step) {
      const int e = tid + step * kKernelThreads;
      const int r = e / kD, c = e % kD;
      if (r < rows) {
        const float* prow = s_s + r * kLS;
        float pv0 = 0.0f, pv1 = 0.0f;  // two chains: the adds of one key wait on the previous
        TS_UNROLL_N(8)
        for (int j = 0; j < kBN; j += 2) {
          pv0 = prow[j] * device::element_to_float(v_s + j * kLK + c) + pv0;
          pv1 = prow[j + 1] * device::element_to_float(v_s + (j + 1) * kLK + c) + pv1;
        }
        float add = pv0 + pv1;
        if constexpr (Traits::kFaulty) {
          // stale_accumulator: the tile's product accumulates onto the previous tiles'.
          if (!stale) tile_pv.at(step) = 0.0f;
          tile_pv.at(step) += add;
          add = tile_pv.at(step);
        }
        acc[step] = acc[step] * alpha_s[r] + add;
      }
    }
    if constexpr (Traits::kTrace) {
      if (p.tile_events != 0 && p.trace.headers != nullptr) {
        Accumulators<kD, kOutSteps> held;
        TS_UNROLL
        for (int i = 0; i < kOutSteps; ++i) held.v[i] = acc[i];
        record_tile_state<kD, kOutSteps>(p, m_s, l_s, held, t, t - visited.begin);
      }
    }
    // The next iteration stores the next K/V tile over this one: wait for every reader.
    if (keep_war_barrier) __syncthreads();
  }

  // The split's state, unnormalised, one buffer row per (query, split).
  const int64_t row0 = coords.first_buffer_row(p);
  TS_UNROLL
  for (int step = 0; step < kOutSteps; ++step) {
    const int e = tid + step * kKernelThreads;
    const int r = e / kD, c = e % kD;
    if (r < rows) p.partial_o[(row0 + static_cast<int64_t>(r) * p.num_splits) * kD + c] = acc[step];
  }
  for (int r = tid; r < rows; r += kKernelThreads) {
    p.partial_m[row0 + static_cast<int64_t>(r) * p.num_splits] = m_s[r];
    p.partial_l[row0 + static_cast<int64_t>(r) * p.num_splits] = l_s[r];
  }
  // Everything above is the plain kernel; the event only reads what it wrote.
  if constexpr (Traits::kTrace) {
    record_split_state<kD>(p, m_s, l_s, p.tile_events != 0 ? visited.size() : 0);
  }
}

// The traced build's block as a function of its own, run by a traced launch's blocks that record
// an event; the others run the plain build's code inline (fa2_forward.cuh's forward_block_traced
// says why: here the per-tile event's call and its branch made the traced build's kv loop 45
// instructions longer than the plain one at head dim 128, sm_90a, and its decode 5% slower on an
// H200).
template <typename T, int kD>
__device__ __noinline__ void partial_block_traced(const AttentionParams& p) {
  partial_block<T, kD, KernelVariant::traced>(p);
}

}  // namespace splitk_detail

template <typename T, int kD, KernelVariant kVariant>
__global__ void __launch_bounds__(kKernelThreads)
    splitk_partial_kernel(const __grid_constant__ AttentionParams p) {
  if constexpr (kVariant == KernelVariant::traced) {
    if (device::block_records_any(p, kSplitkTileStage, kSplitkPartialStage))
      splitk_detail::partial_block_traced<T, kD>(p);
    else
      splitk_detail::partial_block<T, kD, KernelVariant::plain>(p);
  } else {
    splitk_detail::partial_block<T, kD, kVariant>(p);
  }
}

}  // namespace ts
