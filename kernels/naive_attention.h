// The "naive same-precision" attention of flash-attention's tests: the textbook formula in the
// input dtype, as PyTorch computes it (matmuls accumulate in float32 and round their result
// to the dtype; softmax computes in float32 and rounds its output to the dtype). Its error
// against the float64 reference sets the bar of the correctness rule:
//   max |kernel - ref64| <= 2 * max |naive - ref64| + a small floor.
// A row that sees no key gets O = 0 and LSE = -inf (PyTorch would give NaN), as the kernels do.
#pragma once

#include <cstdint>
#include <vector>

#include "base/attention_inputs.h"

namespace ts {

struct NaiveOutput {
  HostTensor o;            // [batch, heads, seq_q, head_dim], the config's dtype
  std::vector<float> lse;  // [batch, heads, seq_q], log-sum-exp of the rounded scores, float32
};

// Scores are q . round(k * scale) (flash-attention's reorder_ops form). Parallel over
// (batch, head) on `workers` threads (0: hardware concurrency).
NaiveOutput naive_attention(const AttentionConfig& config, const AttentionInputs& inputs,
                            unsigned workers = 0);

// s[j] = sum over e of q[e] * k_t[e * seq_kv + j] for keys j in [0, keys), each sum in e's order
// (float32, as a textbook matmul row); `k_t` is K transposed, [head_dim, seq_kv]. Keys side by
// side rather than one dot product at a time: the sums vectorise across keys and keep their order.
void scores_in_order(const float* q, const float* k_t, int64_t head_dim, int64_t seq_kv,
                     int64_t keys, float* s);

// K [seq_kv, head_dim] as float32, multiplied by `scale` in float, rounded to `dtype`, and
// transposed to [head_dim, seq_kv] for scores_in_order.
std::vector<float> scaled_keys_transposed(const HostTensor& k, int64_t first_element, int64_t seq_kv,
                                          int64_t head_dim, float scale, DType dtype);

// Query rows [row0, row0 + rows) of one pair, from its inputs converted to float32 (q and v
// [seq, head_dim]; k as scaled_keys_transposed gives it in the run's dtype, the scores'
// reorder_ops form): `o` ([rows, head_dim]) gets the output
// rounded to the dtype (as float), `lse` ([rows]) the log-sum-exp. The same arithmetic as
// naive_attention, for callers that need a few rows of a long sequence (the analysis, one query
// tile at a time, with the inputs converted once).
void naive_attention_rows(const AttentionConfig& config, const float* q, const float* k_t,
                          const float* v, int64_t row0, int64_t rows, float* o, float* lse);

}  // namespace ts
