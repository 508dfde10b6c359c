// A one-pass attention kernel with an online softmax (FA-1 style), written as a user writes
// one: plain CUDA, the public probe API (tilescope/probe.h, built with TILESCOPE_TRACE=1), and
// one switch per fault variant of fault_variants.h. The diagnosis tests run it on the CPU
// through the SIMT runtime.
//
// One block of block_m threads per (query tile, query head, batch), one thread per query row:
// the thread holds its row's running m, l and O; K and V tiles of block_n keys are loaded into
// shared memory by the whole block (zero past seq_kv). After each kv tile every thread writes
// its row into a planned `step` event (unnormalised state over keys [0, end of the tile)); at the
// end, the output O / l in the input dtype and LSE = m + log l go to memory and to an `out`
// event (normalised convention).
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "tests/analysis/fault_kernels/fault_kernel_params.h"
#include "tests/analysis/fault_kernels/fault_variants.h"
#include "tilescope/probe.h"

namespace ts::test {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename T>
__global__ void one_pass_attention_kernel(const FaultKernelParams p) {
  const TestFault fault = static_cast<TestFault>(p.fault);
  const int r = static_cast<int>(threadIdx.x);
  const int q_tile = static_cast<int>(blockIdx.x), head = static_cast<int>(blockIdx.y),
            batch = static_cast<int>(blockIdx.z);
  const int d = p.head_dim, bn = p.block_n;
  const int q0 = q_tile * p.block_m;
  const int rows = min(p.block_m, p.seq_q - q0);
  const int row = q0 + r;
  const bool valid = r < rows;

  const int group = p.heads_q / p.heads_kv;
  const int kv_head = fault == TestFault::gqa_modulo_head_map ? head % p.heads_kv : head / group;
  const long long kv_batch_stride = fault == TestFault::batch_stride_without_heads
                                        ? static_cast<long long>(p.seq_kv) * d
                                        : static_cast<long long>(p.heads_kv) * p.seq_kv * d;
  const T* q = static_cast<const T*>(p.q) + ((static_cast<long long>(batch) * p.heads_q + head) * p.seq_q) * d;
  const T* k = static_cast<const T*>(p.k) + batch * kv_batch_stride + static_cast<long long>(kv_head) * p.seq_kv * d;
  const T* v = static_cast<const T*>(p.v) + batch * kv_batch_stride + static_cast<long long>(kv_head) * p.seq_kv * d;

  TS_DYNAMIC_SHARED(float, smem);
  float* k_s = smem;
  float* v_s = smem + bn * d;

  // The row's query, scaled once (twice for scale_applied_twice, below).
  float qr[kFaultKernelMaxD];
  for (int c = 0; c < d; ++c) qr[c] = valid ? to_float(q[static_cast<long long>(row) * d + c]) * p.scale : 0.0f;
  // The causal limit: row i sees keys j <= i + offset.
  const bool causal = p.causal != 0;
  const int offset = (p.causal == 1 && fault != TestFault::causal_top_left) ? p.seq_kv - p.seq_q : 0;
  const int limit = row + offset + (fault == TestFault::causal_admits_next_key ? 1 : 0);
  const int alibi_offset = p.causal == 2 ? 0 : p.seq_kv - p.seq_q;  // ALiBi's diagonal (AttentionSpec)
  const int key_end = fault == TestFault::tail_admits_padded_key ? p.seq_kv + 1 : p.seq_kv;
  // kv tiles the query tile visits: every tile up to its last row's causal limit.
  int kv_end = p.num_kv_tiles;
  if (causal) {
    const int last_limit = q0 + rows - 1 + offset + (fault == TestFault::causal_admits_next_key ? 1 : 0);
    kv_end = min(kv_end, last_limit < 0 ? 0 : last_limit / bn + 1);
  }

  float m = fault == TestFault::m_starts_at_zero ? 0.0f : -INFINITY, l = 0.0f;
  float o[kFaultKernelMaxD];
  for (int c = 0; c < d; ++c) o[c] = 0.0f;

  for (int t = 0; t < kv_end; ++t) {
    const int j0 = t * bn;
    // V of the previous tile for v_tile_lags (index arithmetic off by one tile).
    const int vj0 = (fault == TestFault::v_tile_lags && t > 0) ? (t - 1) * bn : j0;
    __syncthreads();  // every thread is done with the previous tiles
    for (int e = r; e < bn * d; e += blockDim.x) {
      const int j = e / d, c = e % d;
      k_s[e] = j0 + j < p.seq_kv ? to_float(k[static_cast<long long>(j0 + j) * d + c]) : 0.0f;
      v_s[e] = vj0 + j < p.seq_kv ? to_float(v[static_cast<long long>(vj0 + j) * d + c]) : 0.0f;
    }
    __syncthreads();

    if (valid) {
      float s[kFaultKernelMaxBlockN];
      float tile_max = -INFINITY;
      for (int j = 0; j < bn; ++j) {
        const int key = j0 + j;
        bool visible = key < key_end;
        if (causal) visible = visible && (fault == TestFault::causal_drops_diagonal ? key < limit : key <= limit);
        float x = 0.0f;
        for (int c = 0; c < d; ++c) x += qr[c] * k_s[j * d + c];
        if (fault == TestFault::scale_applied_twice) x *= p.scale;
        if (p.softcap > 0.0f && fault != TestFault::softcap_not_applied) x = p.softcap * tanhf(x / p.softcap);
        if (p.alibi_slopes && fault != TestFault::alibi_not_applied)
          x -= p.alibi_slopes[head] * fabsf(static_cast<float>(row + alibi_offset - key));
        s[j] = visible ? x : -INFINITY;
        tile_max = fmaxf(tile_max, s[j]);
      }
      const float m_new = fmaxf(m, tile_max);
      const float shift = m_new == -INFINITY ? 0.0f : m_new;  // a row that has seen no key yet
      float alpha = expf(m - shift);
      if (fault == TestFault::rescale_inverted && m != -INFINITY) alpha = expf(shift - m);
      float sum = 0.0f;
      const PRounding rounding = static_cast<PRounding>(p.p_rounding);
      for (int j = 0; j < bn; ++j) {
        s[j] = fault == TestFault::exp2_on_natural_scores ? exp2f(s[j] - shift) : expf(s[j] - shift);
        const float rounded = rounding == PRounding::none ? s[j] : to_float(from_float<T>(s[j]));
        sum += rounding == PRounding::sum_after ? rounded : s[j];
        s[j] = rounded;
      }
      l = (fault == TestFault::l_not_rescaled ? l : l * alpha) + sum;
      for (int c = 0; c < d; ++c) {
        float pv = 0.0f;
        for (int j = 0; j < bn; ++j) pv += s[j] * v_s[j * d + c];
        if (fault == TestFault::pv_added_twice) pv *= 2.0f;
        o[c] = (fault == TestFault::o_not_rescaled ? o[c] : o[c] * alpha) + pv;
      }
      m = m_new;
    }

    const int key_stop = min(j0 + bn, p.seq_kv);
    const tilescope::StateDesc desc =
        tilescope::state(kOnePassStep, batch, head, q0, rows).keys(0, key_stop).step(t);
    const tilescope::Event ev = tilescope::open_planned(p.trace, desc, t);
    if (ev && valid) {
      ev.m()[r] = m;
      ev.l()[r] = l;
      for (int c = 0; c < d; ++c) ev.o_row(r)[c] = o[c];
    }
    if (ev && r == 0) ev.commit(desc);
  }

  // The output: O / l (0 for a row that saw no key) and LSE = m + log l.
  const tilescope::StateDesc out_desc = tilescope::state(kOnePassOut, batch, head, q0, rows)
                                            .keys(0, p.seq_kv)
                                            .step(kv_end)
                                            .convention(tilescope::kNormalized);
  const tilescope::Event out_ev = tilescope::open_planned(p.trace, out_desc, p.num_kv_tiles);
  if (valid) {
    float lse = l == 0.0f ? -INFINITY : m + logf(l);
    if (fault == TestFault::lse_without_log_l) lse = m;
    if (fault == TestFault::lse_in_log2) lse *= 1.4426950408889634f;
    const long long out_row = (static_cast<long long>(batch) * p.heads_q + head) * p.seq_q + row;
    T* out = static_cast<T*>(p.o) + out_row * d;
    for (int c = 0; c < d; ++c) {
      const T x = from_float<T>(l == 0.0f                                 ? 0.0f
                                : fault == TestFault::output_divided_twice ? o[c] / l / l
                                                                           : o[c] / l);
      out[c] = x;
      if (out_ev) out_ev.o_row(r)[c] = to_float(x);
    }
    p.lse[out_row] = lse;
    if (out_ev) {
      out_ev.m()[r] = lse;
      out_ev.l()[r] = 1.0f;
    }
  }
  if (out_ev && r == 0) out_ev.commit(out_desc);
}

}  // namespace ts::test
