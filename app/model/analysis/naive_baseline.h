// The naive same-precision baselines of the correctness rule (tolerance.h), a row block (or a run
// of consecutive ones) at a time, and their errors against the float64 reference:
//   - float32 textbook states (scores q . (k * scale) summed in order, then softcap and ALiBi in
//     float32; max, exp, sums in order) of each piece of the row block's reference (the keys
//     between consecutive boundaries: what its events' ranges are cut into) and of all keys:
//     the yardstick of the intermediate states;
//   - kernels/naive_attention.h (the textbook attention as PyTorch computes it) in the input
//     dtype on the row block's rows: the yardstick of the final output (in float32 the
//     all-keys textbook state above is that already, and is used instead).
// Row blocks (runs of them) in parallel so that the analysis computes it beside the comparison,
// and only for the rows a trace holds.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "app/model/analysis/tolerance.h"
#include "base/attention_spec.h"
#include "base/head_inputs.h"
#include "kernels/naive_attention.h"
#include "kernels/reference.h"

namespace ts {

// One (batch, query head)'s inputs as the baselines read them: its query rows as float32 and
// its kv head's keys and values (NaiveKeys), shared by every query head of the kv head's group,
// so that a GQA run converts each kv head once. Read by every row block of the pair.
struct PairFloats {
  int32_t batch = 0, head = 0;
  int32_t kv_index = 0;  // its kv head's index into the inputs' kv_pairs
  std::vector<float> q;  // [seq_q, head_dim]
  std::shared_ptr<const NaiveKeys> keys;  // null from pair_queries
};
// Every query pair of `inputs`, in q_pairs order; the kv pairs converted on `workers` threads
// (0: every core), with their unscaled keys too when `raw_keys`. Throws std::invalid_argument when
// the inputs do not fit the spec or a query pair's kv head is absent.
std::vector<PairFloats> pair_floats(const AttentionSpec& spec, const HeadInputs& inputs, unsigned workers = 0,
                                    bool raw_keys = false);
// The same without the keys (for a caller that converts them when it needs them: a decode
// trace's are a GiB, and each is read by its few row blocks only).
std::vector<PairFloats> pair_queries(const AttentionSpec& spec, const HeadInputs& inputs);

// The baselines' errors on one row block. `floats` are the row block's (batch, head), `keys`
// its kv head's (floats.keys by default); `reference` is its float64 reference, whose
// boundaries cut the keys into the pieces compared. `forms`: also the textbook states of those
// formulations (NaiveErrors' p_rounded and folded figures; those of a formulation not asked for
// are the plain ones). Throws std::invalid_argument when `floats` belong to another pair, there
// are no keys, or folded states need the unscaled keys (needs_raw_keys) and `keys` lack them.
NaiveErrors naive_row_block_errors(const AttentionSpec& spec, const PairFloats& floats,
                                   const RowBlockReference& reference, const NaiveKeys* keys = nullptr,
                                   StageForms forms = {});
// The same for consecutive row blocks of one (batch, head) with the same boundaries, each
// beginning where the one before it ends (RunReference::for_each_run's runs): the baselines of all
// their rows at once, one pass over the keys (every row's arithmetic is its own: the errors are
// those of the blocks one at a time, their largest). Throws std::invalid_argument as above, and
// when the row blocks are not so.
NaiveErrors naive_row_block_errors(const AttentionSpec& spec, const PairFloats& floats,
                                   std::span<const RowBlockReference* const> references,
                                   const NaiveKeys* keys = nullptr, StageForms forms = {});

// Whether the baselines of `forms` read the unscaled keys (naive_keys' raw_keys): folded
// exponents without a softcap or ALiBi.
bool needs_raw_keys(const AttentionSpec& spec, StageForms forms);

// The larger of each figure.
NaiveErrors max_errors(const NaiveErrors& a, const NaiveErrors& b);

}  // namespace ts
