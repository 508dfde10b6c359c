// gqa_decode_attention.cu — decode attention over a KV cache with grouped-query heads (bf16,
// [batch, seq, heads, head_dim] tensors, per-batch cache lengths, bottom-right causal), a warp per
// (query, head) row: lanes hold head_dim / 32 columns each, a score is a warp sum of shuffles, and
// the online softmax runs in base 2 (the scale and log2 e folded into q, exp2f), as FlashInfer and
// FA3 do. tilescope's second example (docs/your-own-kernel.md): the kernel keeps its signature and
// reads its trace view from a `__device__` symbol, and its events declare their base-2 m channel
// with a convention bit.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include <tilescope/portable.h>
#include <tilescope/probe.h>
#include <tilescope/recorder.h>

#include "gqa_decode_attention.h"

// [doc:symbol]
TILESCOPE_TRACE_SYMBOL(g_decode_trace);
// [/doc]

namespace decode {
namespace {

constexpr int kWarps = 4;        // rows per block
constexpr int kMaxColumns = 4;   // columns per lane: head_dim <= 128
constexpr int kStepKeys = 64;    // an event after every 64 keys
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__global__ void __launch_bounds__(32 * kWarps)
    gqa_decode_attention_kernel(const __nv_bfloat16* q, const __nv_bfloat16* k_cache,
                                const __nv_bfloat16* v_cache, const int* cache_lens, __nv_bfloat16* out,
                                float* lse_log2, const DecodeShape shape) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarps + threadIdx.x / 32;  // (query, head) pair
  const int b = blockIdx.y;
  const int head = row % shape.heads_q;
  const int query = row / shape.heads_q;
  if (query >= shape.seq_q) return;  // the whole warp
  const int kv_head = head / (shape.heads_q / shape.heads_kv);
  const int len = cache_lens[b];
  const int end = min(len, query + len - shape.seq_q + 1);  // keys this row sees: [0, end)

  const size_t q_row = ((static_cast<size_t>(b) * shape.seq_q + query) * shape.heads_q + head) * shape.head_dim;
  float q_reg[kMaxColumns], acc[kMaxColumns];
  for (int i = 0; i < kMaxColumns; ++i) {
    const int c = lane + 32 * i;
    q_reg[i] = c < shape.head_dim ? __bfloat162float(q[q_row + c]) * shape.scale * kLog2e : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY;  // running max of the scores, in base-2 units
  float l = 0.0f;
  int step = 0;
  for (int j = 0; j < end; ++j) {
    const size_t kv_row = ((static_cast<size_t>(b) * shape.cache_len + j) * shape.heads_kv + kv_head) * shape.head_dim;
    float dot = 0.0f;
    for (int i = 0; i < kMaxColumns; ++i) {
      const int c = lane + 32 * i;
      if (c < shape.head_dim) dot += q_reg[i] * __bfloat162float(k_cache[kv_row + c]);
    }
    const float s = warp_sum(dot);
    const float m_new = fmaxf(m, s);
    const float alpha = exp2f(m - m_new);
    const float p = exp2f(s - m_new);
    l = l * alpha + p;
    for (int i = 0; i < kMaxColumns; ++i) {
      const int c = lane + 32 * i;
      if (c < shape.head_dim) acc[i] = acc[i] * alpha + p * __bfloat162float(v_cache[kv_row + c]);
    }
    m = m_new;

    if ((j + 1) % kStepKeys == 0 || j + 1 == end) {
      // [doc:probe-warp]
      // tilescope: the warp's running state over keys [0, j]; m is in base-2 units.
      const tilescope::StateDesc desc = tilescope::state(kStageStep, b, head, query, 1)
                                            .keys(0, j + 1).kv_head(kv_head).step(step++)
                                            .convention(tilescope::kLogBase2);
      if (const tilescope::Event ev = tilescope::open_warp(g_decode_trace, desc)) {
        for (int i = 0; i < kMaxColumns; ++i)
          if (lane + 32 * i < shape.head_dim) ev.o_row(0)[lane + 32 * i] = acc[i];
        if (lane == 0) {
          ev.m()[0] = m;
          ev.l()[0] = l;
          ev.commit(desc);
        }
      }
      // [/doc]
    }
  }

  for (int i = 0; i < kMaxColumns; ++i) {
    const int c = lane + 32 * i;
    if (c < shape.head_dim) out[q_row + c] = __float2bfloat16(l > 0.0f ? acc[i] / l : 0.0f);
  }
  if (lane == 0)
    lse_log2[(static_cast<size_t>(b) * shape.heads_q + head) * shape.seq_q + query] = l > 0.0f ? m + log2f(l) : -INFINITY;
}

}  // namespace

void gqa_decode_attention_forward(const __nv_bfloat16* q, const __nv_bfloat16* k_cache,
                                  const __nv_bfloat16* v_cache, const int* cache_lens, __nv_bfloat16* out,
                                  float* lse_log2, const DecodeShape& shape, cudaStream_t stream) {
  if (shape.head_dim < 1 || shape.head_dim > 32 * kMaxColumns || shape.heads_kv < 1 ||
      shape.heads_q % shape.heads_kv != 0)
    throw std::invalid_argument("gqa_decode_attention: head_dim must be 1..128 and heads_kv divide heads_q");
  const dim3 grid((shape.seq_q * shape.heads_q + kWarps - 1) / kWarps, shape.batch);
  TILESCOPE_LAUNCH(gqa_decode_attention_kernel, grid, dim3(32 * kWarps), 0, stream)(
      q, k_cache, v_cache, cache_lens, out, lse_log2, shape);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("gqa_decode_attention launch: ") + cudaGetErrorString(err));
}

// [doc:bind]
void bind_decode_trace(tilescope::Recorder& recorder, cudaStream_t stream) {
  recorder.bind_symbol(g_decode_trace, stream);
}
// [/doc]

}  // namespace decode
