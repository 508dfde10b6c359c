// flash_attention_science.h — the Split-K attention forward of examples/splitk, as the host code
// (their bindings, here run_splitk.cpp; the benchmark in examples/bench) sees it: templated
// launch functions, explicitly instantiated for half and __nv_bfloat16 in
// flash_attention_science.cu.
//
// Tensors are [batch, heads, seq, head_dim], contiguous, in device memory; softmax_lse is
// [batch, heads, seq] float (natural log). head_dim <= 128.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <tilescope/trace_view.h>

namespace flashmoe {

// The stages the kernels record, in the order of the trace's stage table (run_splitk.cpp
// declares the table; the kernels write these indices).
enum TraceStage : int {
  kStagePartial = 0,  // pass 1: one kv tile's softmax state of a query row, as written to the partials
  kStageReduce = 1,   // pass 2: the row's state merged over kv tiles 0..t
};

// Allocates the partial buffers, runs both passes on `stream`, waits for them and frees the
// partials.
template <typename T>
void flash_attention_forward_split_k(const T* Q, const T* K, const T* V, T* O, float* softmax_lse,
                                     int batch_size, int num_heads, int seq_len, int head_dim,
                                     float softmax_scale, bool causal,
                                     tilescope::TraceView trace, cudaStream_t stream);

// The two passes alone, on partial buffers the caller owns (split_k_partial_rows rows of head_dim
// floats for partial_O, one float each for partial_max and partial_sum); nothing waited for.
size_t split_k_partial_rows(int batch_size, int num_heads, int seq_len);
template <typename T>
void flash_attention_split_k_passes(const T* Q, const T* K, const T* V, T* O, float* softmax_lse,
                                    float* partial_O, float* partial_max, float* partial_sum, int batch_size,
                                    int num_heads, int seq_len, int head_dim, float softmax_scale, bool causal,
                                    tilescope::TraceView trace, cudaStream_t stream);

}  // namespace flashmoe
