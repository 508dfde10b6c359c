// The "naive same-precision" attention of flash-attention's tests: the textbook formula in the
// input dtype, as PyTorch computes it (matmuls accumulate in float32 and round their result
// to the dtype; softmax computes in float32 and rounds its output to the dtype). Its error
// against the float64 reference sets the bar of the correctness rule:
//   max |kernel - ref64| <= 2 * max |naive - ref64| + a small floor.
// A row that sees no key gets O = 0 and LSE = -inf (PyTorch would give NaN), as the kernels do.
#pragma once

#include <vector>

#include "kernels/attention_inputs.h"

namespace ts {

struct NaiveOutput {
  HostTensor o;            // [batch, heads, seq_q, head_dim], the config's dtype
  std::vector<float> lse;  // [batch, heads, seq_q], log-sum-exp of the rounded scores, float32
};

// Scores are q . round(k * scale) (flash-attention's reorder_ops form). Parallel over
// (batch, head) on `workers` threads (0: hardware concurrency).
NaiveOutput naive_attention(const AttentionConfig& config, const AttentionInputs& inputs,
                            unsigned workers = 0);

}  // namespace ts
