// The "naive same-precision" attention of flash-attention's tests (attention_ref with
// upcast=False, reorder_ops=True): the textbook formula in the input dtype, as PyTorch computes
// it. Matmuls accumulate in float32 and round their result to the dtype; elementwise ops on a
// tensor of the dtype (k * scale, the softcap's divide, tanh and multiply) compute in float32
// and round each result to the dtype; the ALiBi bias is a float32 tensor, so adding it promotes
// the scores to float32; softmax computes in float32 and its output is rounded to the dtype.
// Masks and the GQA head mapping follow the attention description (AttentionSpec). Its error
// against the float64 reference sets the bar of the correctness rule (app/model/analysis/
// tolerance.h):
//   max |kernel - ref64| <= 2 * max |naive - ref64| + a small floor.
// A row that sees no key gets O = 0 and LSE = -inf (PyTorch would give NaN), as the kernels do.
#pragma once

#include <cstdint>
#include <vector>

#include "base/attention_spec.h"
#include "base/head_inputs.h"

namespace ts {

struct NaiveOutput {
  HostTensor o;            // [batch, heads_q, seq_q, head_dim], the spec's dtype
  std::vector<float> lse;  // [batch, heads_q, seq_q], log-sum-exp of the final scores, float32
};

// For every query pair the inputs hold (others stay O = 0, LSE = -inf), parallel over the pairs
// on `workers` threads (0: hardware concurrency), each kv head converted once. Throws
// ConfigError for an invalid spec, std::invalid_argument when the inputs do not fit it or a
// query pair's kv head is absent (kernels/reference.h, check_head_inputs).
NaiveOutput naive_attention(const AttentionSpec& spec, const HeadInputs& inputs, unsigned workers = 0);

// One (batch, kv head)'s keys and values as float32, as the textbook reads them: V
// [seq_kv, head_dim]; K times the scale in float32 and transposed to [head_dim, seq_kv] for
// scores_in_order (the float32 textbook's keys), and that rounded to the dtype (reorder_ops'
// k * scale in the input dtype). Converted once per kv head, read by every query head of its
// group.
struct NaiveKeys {
  std::vector<float> v, k_scaled_t;
  std::vector<float> k_rounded_t;  // empty for fp32 (k_scaled_t is that already)
  const std::vector<float>& k_dtype_t() const { return k_rounded_t.empty() ? k_scaled_t : k_rounded_t; }
};
// kv_index: an index into inputs.kv_pairs.
NaiveKeys naive_keys(const AttentionSpec& spec, const HeadInputs& inputs, int32_t kv_index);

// s[j - begin] = sum over e of q[e] * k_t[e * seq_kv + j] for keys j in [begin, end), each sum in
// e's order (float32, as a textbook matmul row); `k_t` is K transposed, [head_dim, seq_kv]. Keys
// side by side rather than one dot product at a time: the sums vectorise across keys and keep
// their order.
void scores_in_order(const float* q, const float* k_t, int64_t head_dim, int64_t seq_kv, int64_t begin,
                     int64_t end, float* s);

// K [seq_kv, head_dim] as float32, multiplied by `scale` in float, rounded to `dtype`, and
// transposed to [head_dim, seq_kv] for scores_in_order.
std::vector<float> scaled_keys_transposed(const HostTensor& k, int64_t first_element, int64_t seq_kv,
                                          int64_t head_dim, float scale, DType dtype);

// The textbook's final scores of query row i of (batch, head) against keys [begin, end), in
// `dtype` (the input dtype for the naive attention, fp32 for the float32 textbook states):
// q . k_t summed in order and rounded to the dtype (the matmul's output), then the softcap and
// the ALiBi bias as PyTorch applies them (see the top of this file). `q_row` is the row as
// float32; `k_t` K scaled (and rounded, for the input dtype) and transposed; s[j - begin].
void textbook_scores(const AttentionSpec& spec, DType dtype, int64_t batch, int64_t head, int64_t i,
                     const float* q_row, const float* k_t, int64_t begin, int64_t end, float* s);

// Query rows [row0, row0 + rows) of (batch, head), from its query rows as float32 (q
// [seq_q, head_dim]) and its kv head's NaiveKeys (k_t: k_dtype_t(), v): `o` ([rows, head_dim])
// gets the output rounded to the dtype (as float), `lse` ([rows]) the log-sum-exp. The same
// arithmetic as naive_attention, for callers that need a few rows of a long sequence (the
// analysis, one row block at a time, with the inputs converted once).
void naive_attention_rows(const AttentionSpec& spec, int64_t batch, int64_t head, const float* q, const float* k_t,
                          const float* v, int64_t row0, int64_t rows, float* o, float* lse);

}  // namespace ts
