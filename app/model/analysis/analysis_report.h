// What the analysis of one run found: per-stage verdicts and error figures, the first
// divergence in the kernel's own order, missing events, the error grids (query index x keys
// covered) and error by query index, and a symptom line a person can act on. The one model the
// CLI (`tilescope diff`, `tilescope export`) and the GUI's panels read.
//
// Stages are the run's own (its stage table: any names, any number), known to the analysis by
// their kind only. Error "ratios" are error / tolerance bar (worst quantity of a row): <= 1
// passes, > 1 fails, +inf for NaN or an infinity where the reference is finite. Grids hold NaN
// where the trace held NaN, so that a heatmap shows it in its own colour.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/model/analysis/symptom_kinds.h"
#include "app/model/analysis/tolerance.h"
#include "app/model/float_grid.h"
#include "base/attention_config.h"
#include "base/attention_spec.h"
#include "instrumentation/trace/trace_event.h"
#include "kernels/tiling.h"

namespace ts {

struct QuantityStats {
  double max_abs = 0;    // max |trace - reference|
  double max_rel = 0;    // max |trace - reference| / (the row's largest |reference|)
  double max_ratio = 0;  // max error / bar
  uint64_t failing_rows = 0;
};

struct NonFiniteCounts {
  uint64_t nan = 0;      // NaN values in the trace
  uint64_t pos_inf = 0;  // +Inf where the reference is finite
  uint64_t neg_inf = 0;  // -Inf where the reference is finite
  uint64_t total() const { return nan + pos_inf + neg_inf; }
};

// One dimension of where something is wrong: the indices that fail among those compared (both
// sorted, unique), e.g. batches {1} of {0, 1}.
struct IndexSet {
  std::vector<int64_t> failing;
  std::vector<int64_t> compared;
  bool empty() const { return failing.empty(); }
  bool all() const { return !failing.empty() && failing.size() == compared.size(); }
};

// Where a stage is wrong, dimension by dimension (failing_sets.h writes them as text).
struct FailingSets {
  uint64_t events_failing = 0, events_compared = 0;
  IndexSet batches, heads;
  IndexSet query_rows;   // query indices within the batch's sequence
  IndexSet splits;       // the events' split (-1: none)
  IndexSet steps;        // the events' step in their block
  IndexSet key_ends;     // one past the last key an event covers (its kv tile / split end)
  IndexSet columns;      // head-dim columns with a failing O cell (of the checked events)
  uint8_t quantities = 0;            // QuantityBit over the failing rows
  uint64_t column_events_checked = 0;  // failing events whose cells were compared for `columns`
};

// The cell furthest outside the tolerance, as torch.testing.assert_close reports its greatest
// mismatch: where, both values, the absolute and relative error, the allowed error and the
// ratio. Values are in the compared convention (event_comparison.h).
struct WorstCell {
  int64_t event_index = -1;
  EventHeader header{};
  int64_t query = 0;          // query index within the (batch, head)
  std::string quantity;       // "m", "lse", "l", "O", "O/l"
  int32_t column = -1;        // head-dim column of an O cell; -1 for m, LSE and l
  double trace = 0, reference = 0;
  double abs_error = 0;       // |trace - reference| (inf for NaN or a one-sided infinity)
  double rel_error = 0;       // abs_error / |reference| (inf where the reference is 0)
  double allowed = 0;         // the bar: atol + rtol x row_scale
  double atol = 0;            // the bar's absolute part (for raw unnormalised O: the rule's atol x l)
  double rtol = 0;
  double row_scale = 0;       // the row's largest |reference| of the quantity (what rtol multiplies)
  double ratio = 0;           // abs_error / allowed
  // For O/l of an unnormalised event, the l the trace's row holds: O/l is the trace's O divided by
  // it, so a 0 there makes an infinite O/l out of finite values. Empty for the other quantities.
  std::optional<double> trace_l;
};

// A row that holds NaN or an infinity where the reference is finite.
struct NonFiniteRow {
  int64_t event_index = -1;
  EventHeader header{};            // the event's
  int64_t query = 0;
  uint16_t nan = 0, pos_inf = 0, neg_inf = 0;  // values of the row (m, l and O)
  bool m_non_finite = false, l_non_finite = false;
  int32_t o_columns = 0;           // O columns that are non-finite
  bool holds_no_key_state = false; // m = -inf, l = 0, O = 0: the trace says the row saw no key
  int64_t reference_keys = 0;      // keys the row sees within the event's key ranges
  KeyRange reference_span{0, 0};   // the first and one past the last of them
};

struct StageReport {
  int32_t stage = 0;        // index in the run's stage table
  StageInfo info;           // name, kind, pass
  bool traced = false;      // the run has (or should have) events of this stage
  std::string convention;   // convention_name() of its events, or "mixed"
  uint64_t events_expected = 0, events_compared = 0, events_failing = 0, events_missing = 0;
  // Recorded but left out of the comparison (their headers contradict the run); the first one's
  // index and reason, or -1 and "".
  uint64_t events_not_compared = 0;
  int64_t first_not_compared_event = -1;
  std::string not_compared_reason;
  uint64_t rows_compared = 0, rows_failing = 0;
  QuantityStats m, l, o_norm, o_raw;  // m is LSE in the normalised convention
  NonFiniteCounts non_finite;
  int64_t first_failing_event = -1;   // index into the run's events
  FailingSets failing;                // where its events are wrong
  std::optional<WorstCell> worst_cell;
  bool clean() const { return events_failing == 0 && events_missing == 0; }
};

// One event's outcome (the GUI's tile navigator colours events by worst_ratio).
struct EventResult {
  bool compared = false;   // false: it does not belong to the run (see anomalies)
  bool passes = true;
  float worst_ratio = 0;
  uint8_t failed = 0;      // QuantityBit (state_compare.h), over the rows
  int32_t failing_rows = 0;
  int32_t first_failing_row = -1;  // within the event
  uint32_t nan = 0, inf = 0;       // non-finite trace values (inf: where the reference is finite)
  uint32_t nan_in_no_key_rows = 0; // NaN values in rows that see no key in the event's key ranges
  int32_t no_key_rows = 0;         // rows that see no key in the event's key ranges
};

// Events of one stage that were recorded but not compared and that come, in the kernel's order,
// before the first divergence: the kernel may have gone wrong there first.
struct UncomparedBefore {
  int32_t stage = -1;             // -1 when the event names no stage of the table
  uint64_t events = 0;
  int64_t first_event = -1;       // the earliest of them in the kernel's order
  std::string reason;             // why that one was not compared
};

// The earliest problem in the kernel's own order: an event over tolerance, or one that was
// never written.
struct Divergence {
  bool found = false;
  bool missing = false;       // the event was never written (no payload to show)
  int64_t event_index = -1;   // into the run's events; -1 when missing
  int64_t missing_index = -1; // into the report's missing events when missing
  EventHeader header{};       // the event (or the missing event's planned identity)
  std::vector<int64_t> query_rows;  // failing rows, as query indices within the (batch, head)
  std::vector<int32_t> columns;     // head-dim columns with a failing O cell
  uint8_t failed = 0;               // QuantityBit
  uint32_t nan = 0;
  float worst_ratio = 0;
  // The first event over tolerance that was written (the one to show when `missing`).
  int64_t first_failing_event = -1;
  // Per stage, in the kernel's order, the events not compared that would have come earlier.
  std::vector<UncomparedBefore> not_compared_before;
};

// Error by (query index x column) of one stage (or the overview) and (batch, head). A column is
// a position in the keys: the end of the key ranges an event covers (the `column_keys`, sorted),
// so the columns of a running state are its steps over the keys, those of a split's state its
// split, and the overview lines every stage up on the same key positions. Cells no event covered
// are masked. Very large grids are pooled over query rows (`rows_per_cell` > 1: a cell is the
// worst of that many queries).
struct ErrorGrid {
  int32_t stage = -1;        // index in the stage table; -1 for the overview
  int32_t batch = 0, head = 0;
  std::vector<int64_t> column_keys;  // per column: one past the last key covered
  int64_t rows_per_cell = 1;
  FloatGrid grid;            // worst ratio per (query, column); NaN where the trace had NaN
  FloatGridView view() const { return grid.view(); }
  // The column of key end `key_end`, or -1.
  int64_t column_of(int64_t key_end) const;
};

// A fact measured about the errors, true whether or not a mechanism is named: a constant ratio
// or offset to the expected value, rows confined to a set, non-finite rows... (symptoms.h).
struct Finding {
  std::string id;                        // stable: "constant_ratio", "rows_max_rose", ...
  std::string text;                      // one line
  std::map<std::string, double> numbers;
};

// A cause, named only when its sufficient evidence holds over the whole run (mechanisms.h).
struct Mechanism {
  SymptomKind kind = SymptomKind::unexplained;
  std::string id;                        // to_string(kind)
  std::string claim;                     // what the kernel does, with its numbers
  std::string scope;                     // where it acts: "every step", "split 1 only"
  std::vector<std::string> evidence;     // what it rests on, one line each
  std::map<std::string, double> numbers; // the model's parameters and tallies
};

struct Symptom {
  std::string kind;     // the stable id of `category` (symptom_kinds.h), e.g. "reduce_scaled_by_l"
  std::string line;     // one sentence a person can act on
  std::vector<std::string> details;  // the evidence, one line each
  SymptomKind category = SymptomKind::clean;
  std::optional<Mechanism> mechanism;    // the cause, when one is established
  std::vector<Mechanism> alternatives;   // others that fit every error equally
  std::vector<Finding> findings;         // what was measured
  std::string next_measurement;          // what to measure next when nothing fits; empty otherwise
  int32_t origin_stage = -1;             // the stage whose events go wrong by themselves first; -1: none claimed
  std::vector<std::string> also_wrong;   // each later stage that goes wrong by itself too, one line each

  void set_kind(SymptomKind k) {
    category = k;
    kind = std::string(to_string(k));
  }
};

// not_compared: an A/B comparison that was not made (the runs' inputs differ); a run's own
// analysis is always clean or a divergence.
enum class Verdict { clean, divergence, not_compared };

struct AnalysisReport {
  std::string label;
  AttentionSpec attention;
  std::vector<StageInfo> stage_table;
  std::optional<AttentionConfig> config;  // runs of our kernels
  std::optional<Tiling> tiling;
  std::map<std::string, std::string> metadata;
  Tolerance tolerance;
  Verdict verdict = Verdict::clean;

  std::vector<StageReport> stages;            // one per stage of the table
  std::vector<EventResult> events;            // one per run event, same index
  Divergence first_divergence;
  std::vector<EventHeader> missing;           // in the kernel's order
  std::vector<std::string> anomalies;         // events that do not belong to the run, duplicates
  uint64_t dropped_events = 0;                // the trace buffer was full: events not captured

  std::vector<ErrorGrid> grids;               // per traced stage and (batch, head)
  std::vector<ErrorGrid> overview;            // per (batch, head): worst of the non-final stages
  std::optional<WorstCell> worst_cell;        // over every stage
  std::vector<NonFiniteRow> non_finite_rows;  // in event order, at most kMaxNonFiniteRows
  Symptom symptom;

  bool clean() const { return verdict == Verdict::clean; }
  const std::string& stage_name(int32_t stage) const;
  // The grid of a stage and pair, or nullptr.
  const ErrorGrid* grid(int32_t stage, int32_t batch, int32_t head) const;
  // Worst ratio per query index of a stage and pair (max over the grid's columns; NaN where a
  // NaN was met); empty when the stage or pair was not traced.
  std::vector<float> error_by_query(int32_t stage, int32_t batch, int32_t head) const;
};

std::string_view to_string(Verdict v);

// The grids' cell budget over a whole report: beyond it, grids are pooled over query rows so
// that a trace claiming huge sizes cannot make the analysis allocate without bound.
inline constexpr int64_t kMaxReportGridCells = int64_t{1} << 26;
// Non-finite rows listed in a report (their counts per stage are always complete).
inline constexpr size_t kMaxNonFiniteRows = 256;

}  // namespace ts
