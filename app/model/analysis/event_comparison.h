// One event beside its reference, cell by cell: what the GUI's detail view draws (trace |
// reference | diff heatmaps, m and l curves over the query rows) and what exports write. Cheap
// enough for every step of a stepping UI: one event's rows x head_dim cells, and the reference of
// its row block (cached by RunReference after its first use).
//
//   RunReference ref(run);
//   EventComparison cmp = compare_event(run, ref, i);
//   cmp.o_norm_diff.view();   // a FloatGridView for a heatmap; cmp.cell_fails as its overlay
#pragma once

#include <cstdint>
#include <vector>

#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/analysis/state_compare.h"
#include "app/model/float_grid.h"
#include "app/model/run_view.h"

namespace ts {

struct EventComparison {
  size_t event_index = 0;
  EventHeader header{};
  EventKey key;
  StageInfo stage;                  // the event's stage (name, kind, pass)
  std::vector<KeyRange> keys;       // the keys it covers (all of them for a final-kind stage)
  int32_t trace_convention = 0;     // ConventionBits, as the event stores its state
  bool reference_normalized = false;
  bool compared_normalized = false; // the raw arrays are in this convention; m in natural units
  int32_t rows = 0, head_dim = 0;   // the event's valid rows (rows past them are not shown)

  // rows x head_dim, row-major. diff = trace - reference (NaN where the trace is NaN; an
  // infinity on one side gives an infinite diff; equal values, infinities included, give 0).
  FloatGrid o_trace, o_reference, o_diff;            // raw O as stored (compared convention)
  FloatGrid o_norm_trace, o_norm_reference, o_norm_diff;  // O / l: the attention output so far
  // Per row: m (LSE when normalised) and l of trace and reference.
  std::vector<float> m_trace, m_reference, l_trace, l_reference;

  std::vector<uint8_t> cell_fails;  // rows * head_dim: raw O or O/l over its bar, or NaN
  std::vector<RowError> row_errors;
  std::vector<RowVerdict> row_verdicts;
  bool passes = true;
  float worst_ratio = 0;

  // Failing rows (within the event) and columns (with a failing cell).
  std::vector<int32_t> failing_rows() const;
  std::vector<int32_t> failing_columns() const;
};

// Event i of `run` against `reference` under reference.tolerance(). Throws std::out_of_range
// for an index past the run's events, AnalysisError for an event that cannot be compared
// (event_problem, no rows) or whose heads have no inputs.
EventComparison compare_event(const RunView& run, const RunReference& reference, size_t i);

}  // namespace ts
