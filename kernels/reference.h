// The float64 reference of any event's state: from the attention description (AttentionSpec)
// and the inputs (HeadInputs), the softmax state of some query rows of one (batch, query head)
// over some key ranges, and those rows' attention output. It knows nothing of the kernel that
// recorded the events — no tiling, no splits: an event says which rows and keys it holds.
//
// States are canonical (event.h's convention 0): unnormalised, natural log, scaled scores:
//   m = max_j s_j,  l = sum_j exp(s_j - m),  O = sum_j exp(s_j - m) v_j
// over the keys in the ranges that the row sees (AttentionSpec's scores and masks); a row that
// sees no key there holds m = -inf, l = 0, O = 0. The output is normalised: the m channel holds
// the natural LSE, the l channel 1, O = softmax(s) V; a row that sees no key at all holds
// LSE = -inf, l = 0, O = 0 (-inf / 0 / 0 in every convention). `express` turns a canonical
// state into what an event of any convention stores.
//
// Cost: a row block's reference (rows [q_begin, q_begin + rows) of one (batch, head)) computes
// each row's scores against the keys it sees once, and one state per piece between consecutive
// boundaries (the key positions where the row block's events start or end their ranges); an
// event's state is then a merge of its pieces, prefixes [0, e) kept ready (FA-1-style traces
// ask for every prefix, reduce-style traces for the prefixes at split ends); a range off the
// boundaries is computed from the keys. Computed on demand and cached by the caller
// (app/model/analysis/run_reference.h).
//
// Inputs: a caller that computes many row blocks builds ReferenceInputs once (each kv head's K
// and V converted once, shared by every row block that reads it, and kept alive by them for
// the ranges off their boundaries); compute_row_block(spec, HeadInputs, ...) is the one-off form
// and converts the keys the row block sees for itself. The arithmetic is float64 throughout;
// keys and values are held as float32, which holds every fp32, fp16 and bf16 input exactly.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/attention_spec.h"
#include "base/head_inputs.h"
#include "tilescope/event.h"

namespace ts {

using tilescope::KeyRange;

class RowBlockReference;

// Some query rows of one (batch, query head): the unit the reference computes.
struct RowBlock {
  int32_t batch = 0, head = 0;
  int32_t q_begin = 0, rows = 0;
  friend auto operator<=>(const RowBlock&, const RowBlock&) = default;
};

// What some rows hold at one point: m[r], l[r], o[r * head_dim + c], canonical convention
// (`normalized` false: unnormalised; true: the output's convention) — except what `express`
// returns, which is in the event's convention named there.
struct RefState {
  bool normalized = false;
  int32_t rows = 0;
  int32_t head_dim = 0;
  std::vector<double> m, l, o;
};

// Merges unnormalised state b into a (log-sum-exp), in float64. Throws std::invalid_argument
// when the shapes differ or either is normalised.
void merge_states(RefState& a, const RefState& b);

// What an event of convention `convention_bits` (tilescope::ConventionBits) stores for the
// canonical state `canonical`, whose scores were scaled by `scale` (the spec's effective_scale):
//   kNormalized:  O / l, the m channel LSE = m + log l, the l channel 1;
//   kLogBase2:    the m (or LSE) channel times log2(e);
//   kUnscaledMax: the m channel divided by `scale` (the max of raw q . k); it concerns the
//                 running max only, so it is ignored with kNormalized (event.h: meaningful for
//                 unnormalised states only); with kLogBase2 both factors apply.
// A row that sees no key stores m = -inf, l = 0, O = 0 in every convention. A normalised
// `canonical` (an output) can only be expressed in normalised conventions. Throws
// std::invalid_argument for bits outside kConventionMask, for an unnormalised convention of a
// normalised state, and for kUnscaledMax without a finite scale > 0.
RefState express(const RefState& canonical, int32_t convention_bits, double scale);

// One kv head's keys and values as the reference's loops read them (defined in reference.cpp).
struct ReferenceKeys;

// The inputs prepared for many row blocks: the spec (checked once) and the inputs (shapes and
// dtype checked once), with every (batch, kv head)'s K and V converted once and kept only in
// that form (inputs() holds the queries and the pairs; its k and v are empty: a decode trace's
// are a GiB). Query rows are converted per row block (a few rows each). Immutable once built:
// any number of threads may compute row blocks from it.
class ReferenceInputs {
 public:
  // Throws ConfigError for an invalid spec, std::invalid_argument when the inputs do not fit
  // it (compute_row_block's checks). Converts on `workers` threads (0: all cores).
  // `inputs_owner`, when given, keeps `inputs` alive (e.g. the run that holds them): float32
  // values are then read where `inputs` holds them instead of copied (the same bits), and the
  // converted keys, and every row block computed from them, hold the owner.
  ReferenceInputs(AttentionSpec spec, const HeadInputs& inputs, unsigned workers = 0,
                  std::shared_ptr<const void> inputs_owner = nullptr);
  ~ReferenceInputs();
  ReferenceInputs(ReferenceInputs&&) noexcept;
  ReferenceInputs& operator=(ReferenceInputs&&) noexcept;

  const AttentionSpec& spec() const { return spec_; }
  const HeadInputs& inputs() const { return inputs_; }
  // The converted keys and values of (batch, kv head); null when the inputs do not hold it.
  std::shared_ptr<const ReferenceKeys> keys(int64_t batch, int64_t kv_head) const;
  // The inputs and their converted keys and values.
  size_t bytes() const;
  // K and V of kv pair `kv_index` (an index into inputs().kv_pairs) as float32 (exact),
  // [seq_kv][head_dim] each.
  void copy_keys(size_t kv_index, float* k, float* v) const;

 private:
  AttentionSpec spec_;
  HeadInputs inputs_;
  std::vector<std::shared_ptr<const ReferenceKeys>> keys_;  // by inputs_.kv_pairs index
};

// The reference of one row block (compute_row_block). Immutable once computed: any number of
// threads may ask it for states.
class RowBlockReference {
 public:
  ~RowBlockReference();

  const RowBlock& block() const { return block_; }
  int32_t head_dim() const { return head_dim_; }
  // Sorted, unique, including 0 and seq_kv.
  const std::vector<int64_t>& boundaries() const { return boundaries_; }

  // The unnormalised state over the union of `ranges` (clipped to [0, seq_kv]; overlapping
  // ranges count each key once; a range with end <= begin covers nothing). Ranges on the
  // boundaries merge pieces (a prefix [0, e) is a copy); others are computed from the keys.
  RefState state(std::span<const KeyRange> ranges) const;
  // The rows' attention output (normalised).
  RefState output() const;
  // Per row: how many keys the row sees within `ranges` (their union, clipped), and within
  // all keys.
  std::vector<int64_t> visible_keys(std::span<const KeyRange> ranges) const;
  std::vector<int64_t> visible_keys() const;

  // The memory this row block holds: its states, query rows and, when it converted them itself
  // (the one-off compute_row_block), its keys; keys shared through ReferenceInputs are counted
  // there.
  size_t bytes() const;

  struct Rows;  // what the range computations read: query rows, what each row sees (reference.cpp)

 private:
  friend struct RowBlockBuilder;
  RowBlockReference();

  // Adds the state over keys [begin, end) to `out` (merging; `started` says whether `out`
  // holds anything yet).
  void add_range(int64_t begin, int64_t end, RefState& out, bool& started) const;

  RowBlock block_;
  int32_t head_dim_ = 0;
  std::vector<int64_t> boundaries_;
  std::unique_ptr<const Rows> rows_;
  std::shared_ptr<const ReferenceKeys> keys_;
  bool owns_keys_ = false;
  // Piece p = keys [boundaries_[p], boundaries_[p + 1]); prefix p = keys [0, boundaries_[p + 1]).
  std::vector<double> piece_m_, piece_l_, piece_o_;     // [piece][row], [piece][row][c]
  std::vector<double> prefix_m_, prefix_l_, prefix_o_;  // [prefix][row], [prefix][row][c]
};

// Computes a row block's reference. Throws std::invalid_argument when the row block is outside
// the spec (batch, head, rows [q_begin, q_begin + rows) within seq_q, rows >= 1), when the
// inputs lack the (batch, head) or its (batch, kv head). `boundaries` may be in any order and
// hold duplicates or values outside [0, seq_kv] (clipped).
std::shared_ptr<const RowBlockReference> compute_row_block(const ReferenceInputs& inputs,
                                                          const RowBlock& block,
                                                          std::vector<int64_t> boundaries);
// The same for consecutive row blocks of one (batch, head), each beginning where the one before
// it ends, computed together: one pass over each piece's keys for all their rows, so that the
// keys stay in cache across more rows (about a quarter faster for the analysis's Split-K blocks
// of 8 rows, taken 8 at a time; docs/perf.md). Each result is what compute_row_block gives its
// block, bit for bit: every row's sums are taken in the same order either way.
std::vector<std::shared_ptr<const RowBlockReference>> compute_row_blocks(const ReferenceInputs& inputs,
                                                                       std::span<const RowBlock> blocks,
                                                                       std::vector<int64_t> boundaries);
// The same for one row block without prepared inputs: also validates the spec (ConfigError)
// and checks the inputs' shapes and dtype against it (std::invalid_argument), and converts the
// keys this row block sees, which it then holds (bytes()).
std::shared_ptr<const RowBlockReference> compute_row_block(const AttentionSpec& spec,
                                                          const HeadInputs& inputs,
                                                          const RowBlock& block,
                                                          std::vector<int64_t> boundaries);

// The boundaries compute_row_block uses: clipped to [0, seq_kv], with 0 and seq_kv, sorted,
// unique. Piece p is keys [b[p], b[p + 1]).
std::vector<int64_t> normalized_boundaries(const AttentionSpec& spec, std::vector<int64_t> boundaries);

// The states of a row block's pieces: m, l [piece][row] and o [piece][row][head_dim], canonical.
struct PieceStates {
  std::vector<double> m, l, o;
};
// A row block's reference from its pieces' states computed elsewhere (the GPU:
// kernels/reference_gpu.h), with `boundaries` normalized: the prefixes are merged and ranges off
// the boundaries computed here as compute_row_block does. Throws std::invalid_argument as
// compute_row_block, and when the boundaries are not normalized or the states' sizes do not fit.
std::shared_ptr<const RowBlockReference> row_block_from_pieces(const ReferenceInputs& inputs, const RowBlock& block,
                                                              std::vector<int64_t> boundaries, PieceStates states);

// Throws std::invalid_argument naming the tensor and the problem when the inputs do not fit
// the spec: shapes [pairs, seq, head_dim], q's dtype the spec's and k's and v's q's, pairs
// inside the spec and listed once, byte counts matching the shapes.
void check_head_inputs(const AttentionSpec& spec, const HeadInputs& inputs);

// The whole output in float64: o [batch, heads_q, seq_q, head_dim], lse [batch, heads_q,
// seq_q] (natural), for every query pair the inputs hold (others stay 0 / -inf); parallel on
// `workers` threads (0: all cores), each kv head converted once. Throws as compute_row_block.
struct ReferenceOutput {
  std::vector<double> o, lse;
};
ReferenceOutput reference_output(const AttentionSpec& spec, const HeadInputs& inputs,
                                 unsigned workers = 0);

}  // namespace ts
