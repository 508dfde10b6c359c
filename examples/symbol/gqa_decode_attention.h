// gqa_decode_attention.h — the decode attention of examples/symbol as its host code sees it: a
// launch function whose kernel keeps its own signature (no trace argument), and the one helper
// the kernel's .cu adds for tilescope: setting its trace symbol from a recorder.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace tilescope {
class Recorder;
}

namespace decode {

// q, out: [batch, seq_q, heads_q, head_dim]; k_cache, v_cache: [batch, cache_len, heads_kv,
// head_dim]; cache_lens[b] keys valid in batch b's cache; lse_log2: [batch, heads_q, seq_q], the
// log2 of each row's softmax sum. The seq_q new queries are the last positions of each batch's
// sequence (bottom-right causal). head_dim <= 128; heads_kv divides heads_q (GQA).
struct DecodeShape {
  int batch, heads_q, heads_kv, seq_q, cache_len, head_dim;
  float scale;
};

enum TraceStage : int { kStageStep = 0 };  // the running state after each 64 keys and at the end

void gqa_decode_attention_forward(const __nv_bfloat16* q, const __nv_bfloat16* k_cache,
                                  const __nv_bfloat16* v_cache, const int* cache_lens, __nv_bfloat16* out,
                                  float* lse_log2, const DecodeShape& shape, cudaStream_t stream);

// Points the kernel's trace symbol at the recorder's buffer (after recorder.start).
void bind_decode_trace(tilescope::Recorder& recorder, cudaStream_t stream);

}  // namespace decode
