// Local replay: what each event should hold given the trace's own earlier states, so that the
// diagnosis tells an event that goes wrong by itself (its step computes something wrong) from one
// that is wrong only because what it read was (an error carried along), and can test models of
// a single step ("the same step without the rescale of O") against every event.
//
// Each compared event gets a source (plan_replay):
//   extend      a running state of the same rows and split over growing keys [b, e_0), [b, e_1)...
//               (e_k >= e_{k-1}: a step may add no key, e.g. the merge of an empty split)
//               (an FA-1 step, a split's state per kv tile, a merge over splits): its previous
//               event's state merged with the step's own keys [e_{k-1}, e_k) (for a merge, the
//               recorded state of exactly those keys, e.g. the split's partial, when there is one);
//   copy        a state that repeats an earlier event of another state stage with the same rows,
//               split and keys (a partial as written after its last kv tile), or a final output
//               that repeats an earlier one of another stage with the same rows (the kernel's
//               output tensor after the final stage that recorded it): that event's values;
//   normalise   any other final output: the latest earlier state of the same rows that covers
//               every key they see, normalised (O / l, LSE = m + log l);
//   from_empty  anything else: the reference's state over the event's own keys.
// The previous state comes from the trace, not the reference: an error made earlier is carried
// into the prediction, and only a step's own error remains.
//
// Rows are compared (check_row) as the verdicts are, with the stage's bars times kReplaySlack:
// the prediction is float64 from the trace's float32 previous state, the kernel's own step is
// float32; plus the rounding of each value to its storage precision (relative: a carried error
// can make values far larger than the reference's, which the bars were sized on). NaN matches NaN and equal infinities match, so a NaN carried along is not an error of
// the step that carries it.
//
// Thread-safety: find_locally_wrong runs its own threads; every other member is for one thread
// at a time (the trace states' small cache is locked, the rest is read-only or per event).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/run_view.h"
#include "kernels/reference.h"

namespace ts {

inline constexpr double kReplaySlack = 2.0;

// What one diagnostic pass (a model's wrong rows, its right rows, a measurement) may cost: 20000
// rows compared (2.5M cells at head dim 128), and references of row blocks worth 2^28 multiply-
// adds (8 FA-1 query tiles of 64 rows x 4096 keys at head dim 128). Beyond it the pass takes the
// events of evenly spaced row blocks (event_identity.h: sample_row_blocks), and the report says
// so. The one full pass is find_locally_wrong's.
inline constexpr uint64_t kDiagnosisRowBudget = 20000;
inline constexpr uint64_t kDiagnosisReferenceBudget = uint64_t{1} << 28;
SampleBudget diagnosis_budget(const AttentionSpec& spec);

enum class StepSource { from_empty, extend, copy, normalise };

struct ReplayStep {
  size_t event = 0;
  StepSource source = StepSource::from_empty;
  int64_t prev = -1;              // the trace event this one continues, copies or normalises
  int64_t prev2 = -1;             // the event before `prev` in the same sequence
  std::vector<KeyRange> piece;    // keys the step adds (from_empty: all the event's keys)
  int64_t piece_event = -1;       // a recorded state of the same rows over exactly `piece`
  int32_t position = 0;           // place in its sequence, from 0
  int32_t sequence_length = 1;
  int32_t sequence = -1;          // id of its sequence (the events of one chain share it)
};

// How one step combines the previous state P with its own keys' state X (each row): `merge` is
// the online softmax (m = max, both rescaled to it); the others are the defects the diagnosis
// tests (mechanisms.h).
enum class CombineRule {
  merge,
  o_not_rescaled,     // O = O_P + w O_X (l merged correctly)
  l_not_rescaled,     // l = l_P + w l_X (O merged correctly)
  own_max,            // m = m_X, l = l_P + l_X, O = O_P + O_X: nothing rescaled (P kept if X sees no key)
  stale_accumulator,  // O = a O_P + w O_X + (O_P - a_P O_P2): the previous step's product added again
  o_weighted_by_l,    // O = a O_P + w l_X O_X
  drop_previous,      // the state is X
  skip_piece,         // the state is P
  piece_twice,        // X merged twice
};

// How the model says the state is stored, on top of the state itself (each row).
struct StoredChannelRule {
  double m_factor = 1.0;        // the m (LSE) channel times this
  int m_log_l = 0;              // the m (LSE) channel plus this x log l (l of the unnormalised state)
  int o_l_power = 0;            // O times l to this power
  bool nan_where_no_key = false; // rows whose state saw no key hold NaN (no guard)
  bool operator==(const StoredChannelRule&) const = default;
};

// An event's state as the trace holds it: unnormalised-equivalent in canonical units (a
// normalised event as m = LSE, l = 1, O = O / l; a row that saw no key as -inf, 0, 0).
struct TraceRows {
  RefState state;
  bool stored_normalized = false;
  bool has_m = true;
};

// The exponent factors of the two rescales of a merge: exp(c_prev (m_P - m)) and
// exp(c_piece (m_X - m)). 1 and 1: the online softmax; a kernel that takes exp2 of natural-log
// scores for its probabilities but exp for its rescale of the old state has 1 and ln 2.
struct CombineExponents {
  double prev = 1.0, piece = 1.0;
  bool operator==(const CombineExponents&) const = default;
};

struct RowCheck {
  bool matches = true;
  uint8_t failed = 0;  // QuantityBit
  float ratio = 0;     // worst error / (bar x slack)
};

class LocalReplay {
 public:
  LocalReplay(const RunView& run, const RunReference& reference, const AnalysisReport& report);

  const RunView& run() const { return run_; }
  const RunReference& reference() const { return reference_; }
  const AnalysisReport& report() const { return report_; }

  // The step of a compared event, or nullptr.
  const ReplayStep* step(size_t event) const;
  const std::vector<ReplayStep>& steps() const { return steps_; }

  // Converted on demand; the few most recent are kept (a step reads its own, its previous and its
  // piece's events, row after row).
  std::shared_ptr<const TraceRows> trace(size_t event) const;
  // The state of the step's own keys for its rows: the recorded piece_event, else the reference
  // (of `block` when given: the step's row block, held by the caller).
  RefState piece_state(const ReplayStep& s, const RowBlockReference* block = nullptr) const;
  // The previous states (empty states when the step has none).
  RefState previous(const ReplayStep& s) const;
  RefState previous2(const ReplayStep& s) const;

  // The step's state under a combine rule, from P = previous(s), P2 = previous2(s) and X.
  RefState combine(const ReplayStep& s, const RefState& x, CombineRule rule, CombineExponents exponents = {}) const;

  // Row r of the event against a predicted unnormalised state, stored as `rule` says; with
  // `columns`, the head-dim columns whose O does not match are set to 1 there.
  RowCheck check_row(size_t event, int32_t r, const RefState& predicted, const StoredChannelRule& rule = {},
                     std::vector<uint8_t>* columns = nullptr) const;

  // Rows of the event that go wrong by themselves (its correct local prediction does not match);
  // empty for events that pass (they are taken as locally right).
  const std::vector<uint8_t>& locally_wrong(size_t event) const;
  bool any_locally_wrong(size_t event) const;
  // Works out locally_wrong for every failing event on `workers` threads (0: every core), a row
  // block at a time, each row block's reference fetched once: the one pass over the whole run.
  void find_locally_wrong(unsigned workers) const;
  // The correct local prediction of a step.
  RefState correct_prediction(const ReplayStep& s, const RowBlockReference* block = nullptr) const;

 private:
  void plan();

  const RunView& run_;
  const RunReference& reference_;
  const AnalysisReport& report_;
  std::vector<ReplayStep> steps_;
  std::vector<int64_t> step_of_event_;
  std::vector<uint8_t> wrong_rows_of(size_t event, const RowBlockReference* block) const;

  mutable std::mutex trace_mutex_;
  mutable std::vector<std::pair<size_t, std::shared_ptr<const TraceRows>>> recent_traces_;  // most recent last
  // Per event, filled once (by find_locally_wrong's threads, each event by one, or on demand).
  mutable std::vector<std::optional<std::vector<uint8_t>>> wrong_;
};

// An empty unnormalised state (no key seen) of `rows` x `head_dim`.
RefState empty_state(int32_t rows, int32_t head_dim);
// Whether row r of a state saw no key.
bool row_is_empty(const RefState& s, int32_t r);

}  // namespace ts
