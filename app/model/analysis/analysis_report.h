// What the analysis of one run found: per-stage verdicts and error figures, the first
// divergence in the kernels' own order, missing events, the error grids (query index x split
// or kv tile) and error by query index, and a symptom line a person can act on. The one model
// the CLI (`tilescope diff`, `tilescope export`) and the GUI's panels read.
//
// Error "ratios" are error / tolerance bar (worst quantity of a row): <= 1 passes, > 1 fails,
// +inf for NaN or an infinity where the reference is finite. Grids hold NaN where the trace
// held NaN, so that a heatmap shows it in its own colour.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/tolerance.h"
#include "app/model/float_grid.h"
#include "instrumentation/trace/trace_event.h"
#include "base/attention_config.h"
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

struct StageReport {
  Stage stage = Stage::fa1_step;
  bool traced = false;      // the run has (or should have) events of this stage
  std::string convention;   // "unnormalized", "normalized" or "mixed" (as the events store it)
  uint64_t events_expected = 0, events_compared = 0, events_failing = 0, events_missing = 0;
  uint64_t rows_compared = 0, rows_failing = 0;
  QuantityStats m, l, o_norm, o_raw;  // m is LSE in the normalised convention
  NonFiniteCounts non_finite;
  int64_t first_failing_event = -1;   // index into the run's events
  bool clean() const { return events_failing == 0 && events_missing == 0; }
};

// One event's outcome (the GUI's tile navigator colours tiles by worst_ratio).
struct EventResult {
  bool compared = false;   // false: its coordinates do not belong to the run (see anomalies)
  bool passes = true;
  float worst_ratio = 0;
  uint8_t failed = 0;      // QuantityBit (state_compare.h), over the rows
  int32_t failing_rows = 0;
  int32_t first_failing_row = -1;  // within the tile
  uint32_t nan = 0, inf = 0;       // non-finite trace values (inf: where the reference is finite)
  uint32_t nan_in_no_key_rows = 0; // NaN values in rows that see no key in the event's kv range
  int32_t no_key_rows = 0;         // rows that see no key in the event's kv range
  KvTileRange kv;                  // the kv tiles it covers (by the tiling)
};

struct MissingEvent {
  EventKey key;
  KvTileRange kv;
};

// The earliest problem in the kernels' own order: an event over tolerance, or one that was
// never written.
struct Divergence {
  bool found = false;
  bool missing = false;       // the event was never written (no payload to show)
  int64_t event_index = -1;   // into the run's events; -1 when missing
  EventKey key;
  KvTileRange kv;
  std::vector<int64_t> query_rows;  // failing rows, as query indices within the (batch, head)
  std::vector<int32_t> columns;     // head-dim columns with a failing O cell
  uint8_t failed = 0;               // QuantityBit
  uint32_t nan = 0;
  float worst_ratio = 0;
  // The first event over tolerance that was written (the one to show when `missing`).
  int64_t first_failing_event = -1;
};

// Error by (query index x column) of one stage and (batch, head): columns are kv tiles for
// fa1.step, splits for Split-K's stages, one for the final output. Cells no event covered are
// masked.
struct ErrorGrid {
  Stage stage = Stage::fa1_step;
  int32_t batch = 0, head = 0;
  std::string column_axis;   // "kv tile", "split", "output"
  FloatGrid grid;            // worst ratio per (query, column); NaN where the trace had NaN
  FloatGridView view() const { return grid.view(); }
};

struct Symptom {
  std::string kind;     // a category of the errors' shape (see symptoms.h), e.g. "reduce_only"
  std::string line;     // one sentence a person can act on
  std::vector<std::string> details;  // the evidence, one line each
};

enum class Verdict { clean, divergence };

struct AnalysisReport {
  std::string label;
  AttentionConfig config;
  Tiling tiling;
  std::map<std::string, std::string> metadata;
  Tolerance tolerance;
  Verdict verdict = Verdict::clean;

  std::array<StageReport, kNumStages> stages{};
  std::vector<EventResult> events;            // one per run event, same index
  Divergence first_divergence;
  std::vector<MissingEvent> missing;          // in the kernels' order
  std::vector<std::string> anomalies;         // events that do not belong to the run, duplicates
  uint64_t dropped_events = 0;                // the trace buffer was full: events not captured

  std::vector<ErrorGrid> grids;               // per traced stage and (batch, head)
  std::vector<ErrorGrid> overview;            // per (batch, head): worst of the intermediate stages
  Symptom symptom;

  bool clean() const { return verdict == Verdict::clean; }
  // The grid of a stage and pair, or nullptr.
  const ErrorGrid* grid(Stage stage, int32_t batch, int32_t head) const;
  // Worst ratio per query index of a stage and pair (max over the grid's columns; NaN where a
  // NaN was met); empty when the stage or pair was not traced.
  std::vector<float> error_by_query(Stage stage, int32_t batch, int32_t head) const;
};

std::string_view to_string(Verdict v);

}  // namespace ts
