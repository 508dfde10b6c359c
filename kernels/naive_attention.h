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
//
// Also the float32 textbook states of the intermediate stages' yardstick (textbook_states).
// Every sum is taken in a fixed order, each term a fused multiply-add (one rounding, as a GPU's
// float32 matmul takes it): a score over the head dim in order, an output element over the keys
// in order. The loops run several rows (or several
// sums) per load of K or V, with AVX2 and FMA where the CPU has them (TILESCOPE_NO_AVX2=1 in the
// environment forces the plain loops); the bits are the same either way.
#pragma once

#include <cstdint>
#include <span>
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
// [seq_kv, head_dim]; K times the scale in float32 (the float32 textbook's keys) and that
// rounded to the dtype (reorder_ops' k * scale in the input dtype), both in groups of
// kNaiveKeyGroup keys, each group transposed ([head_dim][kNaiveKeyGroup], the last one padded
// with zeros) for textbook_scores; with `raw_keys` also K as it is (the unscaled scores of the
// exp2-folded textbook states). Converted once per kv head, read by every query head of its
// group.
inline constexpr int kNaiveKeyGroup = 16;
struct NaiveKeys {
  std::vector<float> v, k_scaled;
  std::vector<float> k_rounded;  // empty for fp32 (k_scaled is that already)
  std::vector<float> k_raw;      // empty unless asked for
  const std::vector<float>& k_dtype() const { return k_rounded.empty() ? k_scaled : k_rounded; }
};
// kv_index: an index into inputs.kv_pairs.
NaiveKeys naive_keys(const AttentionSpec& spec, const HeadInputs& inputs, int32_t kv_index, bool raw_keys = false);

// The textbook's final scores of query rows [row0, row0 + rows) of (batch, head) against the
// keys each row sees, in `dtype` (the input dtype for the naive attention, fp32 for the float32
// textbook states): q . k summed in order and rounded to the dtype (the matmul's output), then
// the softcap and the ALiBi bias as PyTorch applies them (see the top of this file). `q` is the
// pair's query rows as float32 ([seq_q, head_dim]); `k_groups` NaiveKeys' k_scaled or
// k_rounded.
struct TextbookScores {
  std::vector<AttentionSpec::KeySpan> visible;  // per row: the keys it sees
  int64_t first = 0, width = 0;                 // keys [first, first + width): any row's
  std::vector<float> s;                         // [row][key - first], set for each row's keys
  float* row(int64_t r) { return s.data() + r * width; }  // row(r)[j - first]: key j's score
};
TextbookScores textbook_scores(const AttentionSpec& spec, DType dtype, int64_t batch, int64_t head, const float* q,
                               const float* k_groups, int64_t row0, int64_t rows);

// The float32 textbook's unnormalised states of query rows [row0, row0 + rows) of (batch,
// head) over each piece between consecutive `boundaries` (sorted, unique, 0 first and seq_kv
// last) and over all keys: scores as textbook_scores gives them in fp32, then per row the max,
// exp(s - m) and their sum, and O = sum of exp(s - m) v, in key order, in float32. A row that
// sees no key of a piece holds -inf / 0 / 0 there. `p_dtype`: the weights exp(s - m) are rounded
// to it before they weight V (the sums l are not), as a kernel that feeds P to 16-bit tensor-core
// operands does (StageInfo::p_rounded); f32 leaves them as they are. With a 16-bit p_dtype the
// sums of the rounded weights are given besides (piece_l_rounded, all_l_rounded): such a kernel
// may take its l before the rounding or after it. `exp2_folded`: the weights
// as a kernel that folds the scale and log2 e into exp2 takes them (StageInfo::exp2_folded), in
// float32: without a softcap or ALiBi, from the unscaled scores s = q . k (keys.k_raw, which must
// be there) and m = s_max * scale, exp2(fma(s, scale * log2 e, -(m * log2 e))); with either,
// from the final scores, exp2(fma(s, log2 e, -(m * log2 e))). m is the scaled max either way.
// Near a large |m| the exponent of the row's largest score is then not 0 but the rounding of
// those products (up to a few ulps of m log2 e), which a textbook that subtracts the max first
// never has.
struct TextbookStates {
  int32_t rows = 0, head_dim = 0;
  std::vector<float> piece_m, piece_l, piece_o;  // [piece][row], [piece][row], [piece][row][c]
  std::vector<float> all_m, all_l, all_o;        // [row], [row], [row][c]
  std::vector<float> piece_l_rounded, all_l_rounded;  // [piece][row], [row]: 16-bit p_dtype only
};
TextbookStates textbook_states(const AttentionSpec& spec, int64_t batch, int64_t head, const float* q,
                               const NaiveKeys& keys, int64_t row0, int64_t rows, std::span<const int64_t> boundaries,
                               DType p_dtype = DType::f32, bool exp2_folded = false);

// Query rows [row0, row0 + rows) of (batch, head), from its query rows as float32 (q
// [seq_q, head_dim]) and its kv head's NaiveKeys: `o` ([rows, head_dim]) gets the output rounded
// to the dtype (as float), `lse` ([rows]) the log-sum-exp. The same arithmetic as
// naive_attention, for callers that need a few rows of a long sequence (the analysis, one row
// block at a time, with the inputs converted once).
void naive_attention_rows(const AttentionSpec& spec, int64_t batch, int64_t head, const float* q,
                          const NaiveKeys& keys, int64_t row0, int64_t rows, float* o, float* lse);

}  // namespace ts
