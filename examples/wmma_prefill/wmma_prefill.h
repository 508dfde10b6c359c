// A FlashAttention-2-style prefill forward written with CUDA's nvcuda::wmma API: fp16 Q, K, V in
// [batch, heads, seq, head_dim] (head_dim 64), a block of 4 warps per (64-query tile, head,
// batch), S = Q K^T and O += P V on 16x16x16 tensor-core fragments with fp32 accumulators, the
// online softmax in fp32 per row, P rounded to fp16 for P V. Causal masking is bottom-right
// (query i sees keys j <= i + seq_kv - seq_q).
//
// Five bugs a wmma kernel really gets can be switched on at run time (WmmaBug), one at a time.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <tilescope/trace_view.h>

namespace wmma_prefill {

inline constexpr int kHeadDim = 64;
inline constexpr int kBlockQ = 64;   // query rows per block
inline constexpr int kBlockKV = 64;  // keys per kv tile

// The probes' stage indices: the recorder's stage table lists them in this order.
enum Stage : int { kStageStep = 0, kStageFinal = 1 };

enum class WmmaBug : int {
  none = 0,
  k_row_major,         // K^T's fragment loaded row_major: each 16x16 block of K read transposed
  v_unpadded_ldm,      // V's fragments loaded with ldm = head_dim, not the padded shared row stride
  o_not_rescaled,      // O in shared memory not multiplied by exp(m_old - m_new) when the max rises
  no_score_barrier,    // no __syncthreads between storing S and the softmax reading other warps' columns
  kv_tail_off_by_one,  // the last kv tile masks keys j > seq_kv, not j >= seq_kv: one zero key more
};

// Launch on `stream`. O is [B, H, Sq, D] fp16, lse [B, H, Sq] float (natural log; -inf for a row
// that sees no key). Returns cudaSuccess or the launch's error.
cudaError_t wmma_prefill_forward(const __half* q, const __half* k, const __half* v, __half* o, float* lse,
                                 int batch, int heads, int seq_q, int seq_kv, float scale, bool causal,
                                 WmmaBug bug, const tilescope::TraceView& trace, cudaStream_t stream);

}  // namespace wmma_prefill
