// Mechanisms: models of one wrong step, each the correct step (local_replay.h) with exactly one
// thing changed, tested against every event of a stage. A model is established when its
// sufficient signature holds over the whole stage:
//   - it reproduces every row that goes wrong by itself (within kReplaySlack x the tolerance;
//     every one up to kDiagnosisRowBudget rows, then those of evenly spaced events),
//   - and it leaves right every right row it changes: no passing event it would have broken
//     (checked on every event, or evenly spaced ones within kDiagnosisRowBudget rows; a model of
//     a key boundary is checked on every event whose keys it changes).
// When it holds only inside some splits (and those hold every wrong row) while elsewhere it would
// change right rows, it is established there, with that scope. Several models that fit equally
// are all returned: the report lists them as competing, never picks one.
//
// What is changed:
//   combine     the step's arithmetic (CombineRule): O or l not rescaled, no online rescale, the
//               accumulator not reset, the merged O weighted by l again, the previous state
//               dropped, the step's keys skipped or added twice;
//   stored      how the state is stored (StoredChannelRule): m / LSE x a constant (log2 e, ln 2,
//               scale, 1/scale), LSE without log l, m holding LSE, O x l or / l, NaN where a row
//               saw no key;
//   keys        the keys a row reads at a boundary: the causal diagonal or a window edge moved by
//               1-2 keys, the step's range moved, zero-filled keys past the end of the keys;
//   attention   the scores x a constant, exp(c (s - m)), no softcap, no ALiBi bias, the causal
//               diagonal aligned the other way, no causal mask;
//   rows        row i reads row i + delta's query; row q holds row q xor k's state or output (k
//               4, 8 or 16: the row halves of a tensor-core fragment stored the wrong way round),
//               all of it or its O alone (its m / LSE its own); a partner past the queries is
//               the row the kernel computed there from a zero-filled query (row_states.h);
//   kv input    a head reads another (batch, kv head)'s keys and values;
//   partials    a merge reads the partial of buffer row a q + b s + c of another (query, split).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/local_replay.h"
#include "app/model/analysis/row_states.h"

namespace ts {

enum class PieceRule { reference, key_set, attention, row_shift, kv_input, partial_map, row_exchange };

// piece_shift_in_keys: the step's keys shifted, but a step that reaches the end of the keys still
// stops there (a tile wider than the keys left, cut by the tail mask).
enum class KeyEdge { diagonal, piece_begin, piece_end, piece_shift, piece_shift_in_keys, zero_keys_at_end };

struct KeyChange {
  KeyEdge edge = KeyEdge::diagonal;
  int32_t delta = 0;  // keys (zero_keys_at_end: how many)
};

// The attention a kernel computed instead of the trace's.
struct AttentionChange {
  ScoreVariant score;
  std::optional<CausalAlign> causal;  // replaces the spec's causal mask
};

struct StepModel {
  SymptomKind kind = SymptomKind::unexplained;
  CombineRule combine = CombineRule::merge;
  CombineExponents exponents;
  StoredChannelRule stored;
  PieceRule piece = PieceRule::reference;
  KeyChange keys;
  AttentionChange attention;
  int32_t row_delta = 0;
  int32_t row_xor = 0;          // row_exchange: row q holds row q ^ row_xor
  bool exchange_o_only = false; // row_exchange: its O (O / l) only; m and l stay the row's own
  bool exchange_raw_o = false;  // with exchange_o_only: the partner's unnormalised O as it stands
                                // (a partial state's O stored apart from its m and l), not its O / l
  std::array<int64_t, 3> partial_map{};  // buffer row a q + b s + c
  int64_t partial_splits = 0;            // S of the partial buffers' rows q S + s
  // kv input: (batch, head) -> the (batch, kv head) it reads.
  std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>> kv_map;
};

struct ModelFit {
  StepModel model;
  bool holds = false;               // established (over the whole stage, or within scope_splits)
  uint64_t wrong_rows = 0;          // rows that go wrong by themselves it was checked on (all reproduced)
  uint64_t wrong_events = 0;
  uint64_t wrong_rows_total = 0;    // rows of the stage that go wrong by themselves
  uint64_t wrong_rows_past_end = 0; // row_exchange: wrong rows reproduced from a partner past the queries
  bool wrong_sampled = false;       // wrong rows checked on evenly spaced events only
  uint64_t right_rows_checked = 0;  // right rows the model was checked on
  uint64_t right_rows_untouched = 0; // right rows of events the model cannot change
  uint64_t right_rows_in_scope = 0;  // right rows checked inside scope_splits (when scoped)
  uint64_t right_rows_broken = 0;   // ...where that value is not the trace's
  bool sampled = false;             // right rows checked on evenly spaced events only
  std::vector<int32_t> scope_splits;  // empty: the whole stage; else only these splits
  std::string claim;                // what the kernel does, in words, with the numbers
  std::map<std::string, double> numbers;
};

// The models established on a stage's events (empty when none fits). `stage` has rows that go
// wrong by themselves.
std::vector<ModelFit> establish_mechanisms(const LocalReplay& replay, int32_t stage, RowStates& rows);

// How many models establish_mechanisms tried on the stage (for "none of N fits").
size_t models_tested(const LocalReplay& replay, int32_t stage);

// The rows of `stage` that go wrong by themselves which the fit reproduced, in words: "all 20 rows
// of splitk.reduce that go wrong by themselves" (error_shape.h, wrong_rows_text), or, checked on
// evenly spaced events, "every one of the 300 checked (evenly spaced events) of the 9000 rows of
// ..."; without "of ..." when `stage` is empty.
std::string reproduced_rows_text(const ModelFit& fit, const std::string& stage);

// A fit as the report's Mechanism (claim, scope, evidence, numbers).
Mechanism to_mechanism(const ModelFit& fit, const LocalReplay& replay, int32_t stage);

}  // namespace ts
