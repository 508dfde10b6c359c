// Split-K reduce pass: merges the splits' unnormalised states (splitk_partial.cuh, or
// splitk2_partial.cuh for the splitk2 kernel) into the attention output with log-sum-exp weights.
//
// What it computes: for every (batch, head) and query row i, merging split after split
// (s = 0, 1, ...) into a running state:
//   m' = max(m, m_s),  l' = l exp(m - m') + l_s exp(m_s - m'),
//   O' = O exp(m - m') + O_s exp(m_s - m'),
// then O = O' / l' in the input dtype and LSE = m' + log l' (a row that sees no key: O = 0,
// LSE = -inf). Splits that saw no key (m_s = -inf) contribute nothing.
//
// How: one block of 128 threads per (query tile, head, batch); grid (num_q_tiles, heads,
// batch). Each thread owns (row, column) elements of the tile and walks the splits of its
// row, which lie contiguously in the partial buffers ([.., seq_q, num_splits, head_dim]), so
// consecutive threads read consecutive floats. No shared memory and no barrier.
//
// GQA, windows and softcap do not reach it: they shaped the partials (a split outside a row's
// window is one with m = -inf); its events name the kv head the query head read.
//
// Variants (template KernelVariant): plain (no probes), traced (a `splitk.reduce` event after
// each merged split, holding the merged unnormalised state of splits 0..k, and a `final`
// event with LSE and the output as written), faulty (probes + the fault in params.fault):
//   double_count_l  each split's O is weighted by its own sum l_s again (l itself is right);
//   masked_nan      no guard when no split of a row saw a key: exp(-inf - -inf) = NaN;
//   partial_layout  the reducer's query stride forgets the split count: it reads query q,
//                   split s at buffer row q + s instead of q * num_splits + s, so query 0 is
//                   right and later queries read other queries' partials (2+ splits).
//
// Run it: after splitk_partial_kernel or splitk2_partial_kernel, as ts::launch_attention does
// (kernels/launcher.h); a Split-K run of one split often has no reduce (LaunchPlan::partial_writes_output).
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "kernels/device/unroll.cuh"
#include "tilescope/probe.h"
#include "kernels/attention_params.h"
#include "kernels/device/kernel_traits.cuh"
#include "kernels/device/softmax_math.cuh"
#include "kernels/device/vec_io.cuh"
#include "kernels/tile_shapes.h"

namespace ts {

// Eight blocks an SM (at most 64 registers a thread): a block's threads each walk their elements'
// splits with little arithmetic between the loads, so the warps an SM holds are what hides their
// latency; at 68 registers (seven blocks) Split-K 2's reduce on a prefill shape ran 1.11 waves and
// 58% longer (docs/perf.md, "Split-K 2: FA-2's partial over kv splits").
inline constexpr int kSplitkReduceBlocksPerSm = 8;

template <typename T, KernelVariant kVariant>
__global__ void __launch_bounds__(kKernelThreads, kSplitkReduceBlocksPerSm) splitk_reduce_kernel(const AttentionParams p) {
  using Traits = device::VariantTraits<kVariant>;
  const int tid = static_cast<int>(threadIdx.x);
  const int q_tile = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  const int batch = static_cast<int>(blockIdx.z);
  const int rows = rows_in_q_tile(p.seq_q, p.block_m, q_tile);
  const int64_t q0 = static_cast<int64_t>(q_tile) * p.block_m;
  const int d = p.head_dim;
  const int n = p.num_splits;
  const int kv_head = kv_head_of<int>(head, p.heads, p.heads_kv);  // for the events
  const int64_t bh = static_cast<int64_t>(batch) * p.heads + head;
  const int64_t block = device::block_linear_index();
  const tilescope::BlockProbe<Traits::kTrace> probe(p.trace, block);
  const bool guard = !Traits::has(p, Fault::masked_nan);
  const bool weight_by_l = Traits::has(p, Fault::double_count_l);
  const bool layout_bug = Traits::has(p, Fault::partial_layout);

  // This thread's elements of the tile, a chunk at a time: e = chunk + tid + 128 i -> (row e / d,
  // column e % d). A Split-K tile (at most kSplitkMaxBlockM rows) is one chunk; a Split-K 2 tile
  // (FA-2's, up to 128 rows) is several, each merged over every split in turn, so that the
  // per-thread state stays kMaxElems long whatever the rows. An event's payload is written chunk
  // by chunk (reopen) and committed with the last.
  constexpr int kMaxElems = kSplitkMaxBlockM * 256 / kKernelThreads;
  constexpr int kChunk = kMaxElems * kKernelThreads;
  const int elems = rows * d;
  // Buffer row of (query, split 0) for the element's query; the splits of a query follow.
  auto first_row = [&](int r) {
    const int64_t query = q0 + r;
    return layout_bug ? bh * p.seq_q * n + query : (bh * p.seq_q + query) * n;
  };
  T* o = static_cast<T*>(p.o) + batch * p.o_batch_stride + head * p.o_head_stride;
  for (int chunk = 0; chunk < elems; chunk += kChunk) {
    const bool first_chunk = chunk == 0, last_chunk = chunk + kChunk >= elems;
    float m[kMaxElems], l[kMaxElems], acc[kMaxElems];
    TS_UNROLL
    for (int i = 0; i < kMaxElems; ++i) {
      m[i] = device::kNegInf;
      l[i] = 0.0f;
      acc[i] = 0.0f;
    }

    for (int s = 0; s < n; ++s) {
      // once per thread, split and chunk
      const tilescope::Event merged = first_chunk ? probe.open(p.trace, kSplitkReduceStage, s)
                                                  : probe.reopen(p.trace, kSplitkReduceStage, s);
      TS_UNROLL
      for (int i = 0; i < kMaxElems; ++i) {
        const int e = chunk + tid + i * kKernelThreads;
        if (e < elems) {
          const int r = e / d, c = e % d;
          const int64_t row = first_row(r) + s;
          device::merge_state(m[i], l[i], acc[i], p.partial_m[row], p.partial_l[row],
                              p.partial_o[row * d + c], guard, weight_by_l);
          if (merged) {
            merged.o_row(r)[c] = acc[i];
            if (c == 0) {
              merged.m()[r] = m[i];
              merged.l()[r] = l[i];
            }
          }
        }
      }
      if (merged && tid == 0 && last_chunk) {
        const KvTileRange split = split_kv_tile_range(s, p.kv_tiles_per_split, p.num_kv_tiles);
        merged.commit(device::state_header(kSplitkReduceStage, 0, batch, head, kv_head, q0, rows, 0,
                                           device::tile_key(split.end, p.block_n, p.seq_kv), s, s,
                                           block));
      }
    }

    const tilescope::Event final_event = first_chunk ? probe.open(p.trace, kSplitkFinalStage, 0)
                                                     : probe.reopen(p.trace, kSplitkFinalStage, 0);
    TS_UNROLL
    for (int i = 0; i < kMaxElems; ++i) {
      const int e = chunk + tid + i * kKernelThreads;
      if (e < elems) {
        const int r = e / d, c = e % d;
        const int64_t query = q0 + r;
        const T out = device::from_float<T>(device::normalise(acc[i], l[i], guard));
        o[query * p.o_row_stride + c] = out;
        if (final_event) final_event.o_row(r)[c] = device::to_float(out);
        if (c == 0) {
          const float lse = device::log_sum_exp(m[i], l[i], guard);
          p.lse[bh * p.seq_q + query] = lse;
          if (final_event) {
            final_event.m()[r] = lse;
            final_event.l()[r] = 1.0f;
          }
        }
      }
    }
    if (final_event && tid == 0 && last_chunk)
      final_event.commit(device::state_header(kSplitkFinalStage, tilescope::kNormalized, batch, head,
                                              kv_head, q0, rows, 0, p.seq_kv, -1, n, block));
  }
}

}  // namespace ts
