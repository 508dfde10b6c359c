// A Split-K (flash-decoding) attention written as a user writes one: a partial pass where each
// split of the kv tiles computes its own unnormalised state, then a merge pass that combines the
// splits with log-sum-exp weights. Plain CUDA, the public probe API (TILESCOPE_TRACE=1), one
// switch per fault variant of fault_variants.h; run on the CPU by the SIMT runtime.
//
// Partial: one block of block_m threads per (query tile x split, query head, batch), one thread
// per query row. Split s covers kv tiles [s * tiles_per_split, (s + 1) * tiles_per_split). After
// each kv tile a `tile` event (the split's running state so far); at the end a `partial` event
// (the split's state, as written to the partial buffers).
// Merge: one block of block_m threads per (query tile, query head, batch); each thread merges
// its row's splits in order, a `merge` event after each (the merged state of splits 0..s), and
// writes O / l and LSE (an `out` event, normalised).
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "tests/analysis/fault_kernels/fault_kernel_params.h"
#include "tests/analysis/fault_kernels/fault_variants.h"
#include "tests/analysis/fault_kernels/one_pass_kernel.cuh"
#include "tilescope/probe.h"

namespace ts::test {

template <typename T>
__global__ void split_partial_kernel(const FaultKernelParams p) {
  const TestFault fault = static_cast<TestFault>(p.fault);
  const int r = static_cast<int>(threadIdx.x);
  const int q_tile = static_cast<int>(blockIdx.x) / p.num_splits;
  const int split = static_cast<int>(blockIdx.x) % p.num_splits;
  const int head = static_cast<int>(blockIdx.y), batch = static_cast<int>(blockIdx.z);
  const int d = p.head_dim, bn = p.block_n;
  const int q0 = q_tile * p.block_m;
  const int rows = min(p.block_m, p.seq_q - q0);
  const int row = q0 + r;
  const bool valid = r < rows;
  const int kv_head = head / (p.heads_q / p.heads_kv);
  const long long kv_base = (static_cast<long long>(batch) * p.heads_kv + kv_head) * p.seq_kv * d;
  const T* q = static_cast<const T*>(p.q) + ((static_cast<long long>(batch) * p.heads_q + head) * p.seq_q) * d;
  const T* k = static_cast<const T*>(p.k) + kv_base;
  const T* v = static_cast<const T*>(p.v) + kv_base;

  TS_DYNAMIC_SHARED(float, smem);
  float* k_s = smem;
  float* v_s = smem + bn * d;

  const int tile_begin = min(split * p.tiles_per_split, p.num_kv_tiles);
  const int tile_end = min(tile_begin + p.tiles_per_split, p.num_kv_tiles);
  const int key_begin = min(tile_begin * bn, p.seq_kv), key_end = min(tile_end * bn, p.seq_kv);
  // splits_shifted_one_key: every split after the first starts one key early.
  const int shift_keys = (fault == TestFault::splits_shifted_one_key && split > 0) ? 1 : 0;

  float qr[kFaultKernelMaxD];
  for (int c = 0; c < d; ++c) qr[c] = valid ? to_float(q[static_cast<long long>(row) * d + c]) * p.scale : 0.0f;
  const int offset = p.causal == 1 ? p.seq_kv - p.seq_q : 0;
  const int limit = row + offset;
  const bool drop_diagonal = fault == TestFault::last_split_drops_diagonal && split == p.num_splits - 1;

  float m = -INFINITY, l = 0.0f;
  float o[kFaultKernelMaxD];
  for (int c = 0; c < d; ++c) o[c] = 0.0f;

  for (int t = tile_begin; t < tile_end; ++t) {
    const int j0 = t * bn - shift_keys;
    __syncthreads();
    for (int e = r; e < bn * d; e += blockDim.x) {
      const int j = e / d, c = e % d;
      const bool in = j0 + j >= 0 && j0 + j < p.seq_kv;
      k_s[e] = in ? to_float(k[static_cast<long long>(j0 + j) * d + c]) : 0.0f;
      v_s[e] = in ? to_float(v[static_cast<long long>(j0 + j) * d + c]) : 0.0f;
    }
    __syncthreads();
    if (valid) {
      float s[kFaultKernelMaxBlockN];
      float tile_max = -INFINITY;
      for (int j = 0; j < bn; ++j) {
        const int key = j0 + j;
        bool visible = key >= 0 && key < p.seq_kv;
        if (p.causal != 0) visible = visible && (drop_diagonal ? key < limit : key <= limit);
        float x = 0.0f;
        for (int c = 0; c < d; ++c) x += qr[c] * k_s[j * d + c];
        if (p.softcap > 0.0f) x = p.softcap * tanhf(x / p.softcap);
        s[j] = visible ? x : -INFINITY;
        tile_max = fmaxf(tile_max, s[j]);
      }
      const float m_new = fmaxf(m, tile_max);
      const float shift = m_new == -INFINITY ? 0.0f : m_new;
      const float alpha = expf(m - shift);
      float sum = 0.0f;
      for (int j = 0; j < bn; ++j) {
        s[j] = expf(s[j] - shift);
        sum += s[j];
      }
      l = l * alpha + sum;
      for (int c = 0; c < d; ++c) {
        float pv = 0.0f;
        for (int j = 0; j < bn; ++j) pv += s[j] * v_s[j * d + c];
        o[c] = o[c] * alpha + pv;
      }
      m = m_new;
    }
    const int step = t - tile_begin;
    const tilescope::StateDesc desc = tilescope::state(kSplitTile, batch, head, q0, rows)
                                          .keys(key_begin, min((t + 1) * bn, p.seq_kv))
                                          .split(split)
                                          .step(step);
    const tilescope::Event ev = tilescope::open_planned(p.trace, desc, step);
    if (ev && valid) {
      ev.m()[r] = m;
      ev.l()[r] = l;
      for (int c = 0; c < d; ++c) ev.o_row(r)[c] = o[c];
    }
    if (ev && r == 0) ev.commit(desc);
  }

  // The split's state into the partial buffers (and the `partial` event, as written).
  const tilescope::StateDesc desc =
      tilescope::state(kSplitPartial, batch, head, q0, rows).keys(key_begin, key_end).split(split).step(tile_end - tile_begin);
  const tilescope::Event ev = tilescope::open_planned(p.trace, desc, p.tiles_per_split);
  if (valid) {
    const long long at = ((static_cast<long long>(batch) * p.heads_q + head) * p.seq_q + row) * p.num_splits + split;
    const float m_stored = fault == TestFault::partial_m_in_log2 ? m * 1.4426950408889634f : m;
    p.part_m[at] = m_stored;
    p.part_l[at] = l;
    const int columns = fault == TestFault::partial_o_half_columns ? d / 2 : d;
    for (int c = 0; c < d; ++c) {
      const float x = (fault == TestFault::partial_o_normalized && l > 0.0f) ? o[c] / l : o[c];
      if (c < columns) p.part_o[at * d + c] = x;
      if (ev) ev.o_row(r)[c] = x;
    }
    if (ev) {
      ev.m()[r] = m_stored;
      ev.l()[r] = l;
    }
  }
  if (ev && r == 0) ev.commit(desc);
}

template <typename T>
__global__ void split_merge_kernel(const FaultKernelParams p) {
  const TestFault fault = static_cast<TestFault>(p.fault);
  const int r = static_cast<int>(threadIdx.x);
  const int q_tile = static_cast<int>(blockIdx.x), head = static_cast<int>(blockIdx.y),
            batch = static_cast<int>(blockIdx.z);
  const int d = p.head_dim;
  const int q0 = q_tile * p.block_m;
  const int rows = min(p.block_m, p.seq_q - q0);
  const int row = q0 + r;
  const bool valid = r < rows;
  // merge_reads_next_query: the partials' query index is off by one (clamped to the last query).
  const int read_row = fault == TestFault::merge_reads_next_query ? min(row + 1, p.seq_q - 1) : row;
  const long long bh = static_cast<long long>(batch) * p.heads_q + head;

  float m = -INFINITY, l = 0.0f;
  float o[kFaultKernelMaxD];
  for (int c = 0; c < d; ++c) o[c] = 0.0f;
  const int merged = fault == TestFault::merge_skips_last_split ? p.num_splits - 1 : p.num_splits;
  for (int s = 0; s < p.num_splits; ++s) {
    if (valid && s < merged) {
      const long long at = (bh * p.seq_q + read_row) * p.num_splits + s;
      const float ms = p.part_m[at], ls = p.part_l[at];
      const float m_new = fmaxf(m, ms);
      const float shift = m_new == -INFINITY ? 0.0f : m_new;
      const float alpha = expf(m - shift), w = expf(ms - shift);
      l = (fault == TestFault::merge_l_not_rescaled ? l : l * alpha) + ls * w;
      for (int c = 0; c < d; ++c) {
        if (fault == TestFault::merge_weights_swapped) {
          o[c] = o[c] * w + alpha * p.part_o[at * d + c];
          continue;
        }
        o[c] = (fault == TestFault::merge_o_not_rescaled ? o[c] : o[c] * alpha) + w * p.part_o[at * d + c];
      }
      m = m_new;
    }
    const int split_end = min(min((s + 1) * p.tiles_per_split, p.num_kv_tiles) * p.block_n, p.seq_kv);
    const tilescope::StateDesc desc =
        tilescope::state(kSplitMerge, batch, head, q0, rows).keys(0, split_end).split(s).step(s);
    const tilescope::Event ev = tilescope::open_planned(p.trace, desc, s);
    if (ev && valid) {
      ev.m()[r] = m;
      ev.l()[r] = l;
      for (int c = 0; c < d; ++c) ev.o_row(r)[c] = o[c];
    }
    if (ev && r == 0) ev.commit(desc);
  }

  const tilescope::StateDesc out_desc = tilescope::state(kSplitOut, batch, head, q0, rows)
                                            .keys(0, p.seq_kv)
                                            .step(p.num_splits)
                                            .convention(tilescope::kNormalized);
  const tilescope::Event out_ev = tilescope::open_planned(p.trace, out_desc, p.num_splits);
  if (valid) {
    const float lse = l == 0.0f ? -INFINITY : m + logf(l);
    T* out = static_cast<T*>(p.o) + (bh * p.seq_q + row) * d;
    for (int c = 0; c < d; ++c) {
      const T x = from_float<T>(l == 0.0f ? 0.0f : o[c] / l);
      out[c] = x;
      if (out_ev) out_ev.o_row(r)[c] = to_float(x);
    }
    p.lse[bh * p.seq_q + row] = lse;
    if (out_ev) {
      out_ev.m()[r] = lse;
      out_ev.l()[r] = 1.0f;
    }
  }
  if (out_ev && r == 0) out_ev.commit(out_desc);
}

}  // namespace ts::test
