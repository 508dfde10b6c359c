// Float64 softmax states of single query rows over keys the caller chooses, under a changed
// attention: what a kernel with one thing wrong would have computed (the scores scaled again,
// exp2 for exp, no softcap, another kv head's keys, a key more or less at a mask's edge, zero-
// filled keys past the end, a query row past the end that the kernel computes but never stores).
// The diagnosis's models (mechanisms.h) compare the trace with these.
//
// Unlike the reference (kernels/reference.h), no mask is applied here: `ranges` are the keys the
// row reads, and the caller works out which ones a changed mask lets through (visible_in). The
// arithmetic follows AttentionSpec's definition: s = score_factor x scale x q . k, then softcap,
// then ALiBi; m = max s, l = sum exp(c (s - m)), O = sum exp(c (s - m)) v with c the exponent
// factor. Cost: keys x head_dim per row. Not thread-safe (it caches converted inputs).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <span>
#include <vector>

#include "base/attention_spec.h"
#include "base/head_inputs.h"
#include "kernels/reference.h"

namespace ts {

// What a model changes in the scores and exponentials (the defaults change nothing).
struct ScoreVariant {
  double score_factor = 1.0;     // s -> c s, before softcap (the scale applied twice: c = scale)
  double exponent_factor = 1.0;  // exp(c (s - m)) (exp2 on natural-log scores: c = ln 2)
  bool softcap = true;           // false: the spec's softcap is not applied
  bool alibi = true;             // false: the spec's ALiBi is not applied
  bool operator==(const ScoreVariant&) const = default;
};

// One row's unnormalised state (m, l, O[head_dim]).
struct RowState {
  double m = -INFINITY, l = 0;
  std::vector<double> o;
};

class RowStates {
 public:
  RowStates(const AttentionSpec& spec, const HeadInputs& inputs);

  // Whether the inputs hold these pairs.
  bool has_query(int32_t batch, int32_t head) const { return inputs_.q_index(batch, head) >= 0; }
  bool has_kv(int32_t batch, int32_t kv_head) const { return inputs_.kv_index(batch, kv_head) >= 0; }
  // The kv pairs the inputs hold, in their order.
  const std::vector<std::array<int32_t, 2>>& kv_pairs() const { return inputs_.kv_pairs; }

  // The state of query row `row` of (batch, head) over the keys of `ranges` (no mask applied)
  // read from kv pair (kv_batch, kv_head), plus `zero_keys` keys of raw score 0 and value 0.
  // Throws std::invalid_argument for pairs the inputs lack.
  RowState state(int32_t batch, int32_t head, int64_t row, int32_t kv_batch, int32_t kv_head,
                 std::span<const KeyRange> ranges, int32_t zero_keys, const ScoreVariant& variant);

  // The state of row `row` of (batch, head) past the batch's queries (row >= q_len(batch)), as a
  // kernel computes it in the rows of its last query tile that it never stores: the tile's load
  // zero-fills them (FA-2's cp.async zero-fill, a masked load with 0 for what it leaves out), so
  // every raw score is 0 (then softcap and ALiBi, the row's diagonal being row + offset). `ranges`
  // as for state(); visible_past_end gives the keys the mask lets such a row see.
  RowState zero_query_state(int32_t batch, int32_t head, int64_t row, int32_t kv_batch, int32_t kv_head,
                            std::span<const KeyRange> ranges);

  const AttentionSpec& spec() const { return spec_; }

 private:
  RowState state_of(std::span<const double> q, int32_t batch, int32_t head, int64_t row, int32_t kv_batch,
                    int32_t kv_head, std::span<const KeyRange> ranges, int32_t zero_keys, const ScoreVariant& variant);
  const std::vector<double>& query_row(int32_t batch, int32_t head, int64_t row);
  const std::vector<float>& kv(int32_t kv_batch, int32_t kv_head, bool values);

  AttentionSpec spec_;
  const HeadInputs& inputs_;
  std::map<std::tuple<int32_t, int32_t, int64_t>, std::vector<double>> queries_;
  std::map<std::tuple<int32_t, int32_t, bool>, std::vector<float>> keys_;
};

// The keys row `row` of `batch` sees under `spec`, within `ranges` (their intersections with
// the row's visible span, in order).
std::vector<KeyRange> visible_in(const AttentionSpec& spec, int32_t batch, int64_t row, std::span<const KeyRange> ranges);
// The same for a row past the batch's queries (row >= q_len(batch), which visible_in gives no
// key): the mask rule of base/attention_rules.h applied to its diagonal row + offset(batch), as a
// kernel that computes its query tile's rows past the end masks them.
std::vector<KeyRange> visible_past_end(const AttentionSpec& spec, int32_t batch, int64_t row, std::span<const KeyRange> ranges);
// How many keys that is.
int64_t count_keys(std::span<const KeyRange> ranges);

}  // namespace ts
