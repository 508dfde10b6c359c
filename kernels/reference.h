// The float64 reference (the v2 interface: an event's state from the attention description).
//
// The float64 reference of any event's state: from the attention description (AttentionSpec)
// and the inputs (HeadInputs), the softmax state of some query rows of one (batch, query head)
// over some key ranges, and those rows' attention output. It knows nothing of the kernel that
// recorded the events — no tiling, no splits: an event says which rows and keys it holds.
//
// States are canonical (event.h's convention 0): unnormalised, natural log, scaled scores:
//   m = max_j s_j,  l = sum_j exp(s_j - m),  O = sum_j exp(s_j - m) v_j
// over the keys in the ranges that the row sees (AttentionSpec's masks); a row that sees no
// key there holds m = -inf, l = 0, O = 0. The output is normalised: the m channel holds the
// natural LSE, the l channel 1, O = softmax(s) V; a row that sees no key at all: LSE = -inf,
// O = 0.
//
// Cost: a row block's reference (rows [q_begin, q_begin + rows) of one (batch, head)) computes
// each row's scores against the keys it sees once, and one state per piece between consecutive
// boundaries (the key positions where the row block's events start or end their ranges); an
// event's state is then a merge of its pieces, prefixes [0, e) kept ready. Computed on demand
// and cached by the caller (app/model/analysis/run_reference.h).
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/attention_spec.h"
#include "base/head_inputs.h"
#include "tilescope/event.h"

namespace ts {

using tilescope::KeyRange;

// Some query rows of one (batch, query head): the unit the reference computes.
struct RowBlock {
  int32_t batch = 0, head = 0;
  int32_t q_begin = 0, rows = 0;
  friend auto operator<=>(const RowBlock&, const RowBlock&) = default;
};

// What some rows hold at one point: m[r], l[r], o[r * head_dim + c], canonical convention
// (`normalized` false: unnormalised; true: the output's convention).
struct RefState {
  bool normalized = false;
  int32_t rows = 0;
  int32_t head_dim = 0;
  std::vector<double> m, l, o;
};

// Merges unnormalised state b into a (log-sum-exp), in float64.
void merge_states(RefState& a, const RefState& b);

class RowBlockReference {
 public:
  const RowBlock& block() const;
  // Sorted, unique, including 0 and seq_kv.
  const std::vector<int64_t>& boundaries() const;

  // The unnormalised state over the union of `ranges` (clipped to [0, seq_kv]; overlapping
  // ranges count each key once). Ranges on the boundaries merge pieces; others are computed
  // from the scores directly.
  RefState state(std::span<const KeyRange> ranges) const;
  // The rows' attention output (normalised).
  RefState output() const;
  // Per row: how many keys the row sees within `ranges`, and within all keys.
  std::vector<int64_t> visible_keys(std::span<const KeyRange> ranges) const;
  std::vector<int64_t> visible_keys() const;

  size_t bytes() const;
};

// Computes a row block's reference. Throws std::invalid_argument when the row block is outside
// the spec, when the inputs lack the (batch, head) or its (batch, kv head), or their shapes do
// not fit the spec. `boundaries` may be in any order and hold duplicates or values outside
// [0, seq_kv] (clipped).
std::shared_ptr<const RowBlockReference> compute_row_block(const AttentionSpec& spec,
                                                          const HeadInputs& inputs,
                                                          const RowBlock& block,
                                                          std::vector<int64_t> boundaries);

// The whole output in float64: o [batch, heads_q, seq_q, head_dim], lse [batch, heads_q,
// seq_q] (natural), for every query pair the inputs hold (others stay 0 / -inf); parallel on
// `workers` threads (0: all cores).
struct ReferenceOutput {
  std::vector<double> o, lse;
};
ReferenceOutput reference_output(const AttentionSpec& spec, const HeadInputs& inputs,
                                 unsigned workers = 0);

}  // namespace ts
