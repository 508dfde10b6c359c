// The analysis of one run (analyze_run.h) as the sequence of its phases, each a function of its
// own file, run in this order; each reads what the phases before it wrote into the report.
//
//   0. start_report           (identify_events.cpp)   the report's frame
//   1. identify_events        (identify_events.cpp)   which events can be compared, which repeat
//                                                      another, the row blocks they form
//   2. compare_events         (compare_events.cpp)    every compared event's rows against the
//                                                      float64 reference; the tolerance if unknown
//   3. judge_events           (verdicts.cpp)          each event's and stage's verdict and figures
//   4. build_error_grids      (error_grids.cpp)       the error grids and their overview
//   5. collect_missing_events (missing_events.cpp)    the planned events never written
//      mark_absent_cells      (absent_cells.h)        why each empty grid cell is empty
//   6. find_first_divergence  (first_divergence.cpp)  the earliest problem in the kernel's order
//   7. measure_failing_sets, find_worst_cells (failing_sets.h, worst_cell.h): where it is wrong
//   8. diagnose               (symptoms.h)            the symptom line and its evidence
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/analysis/state_compare.h"
#include "app/model/run_view.h"

namespace ts {

// Phase 1's result: the compared events grouped by the row block they read (the reference's
// unit), blocks in order of their first event.
struct ComparedEvents {
  std::vector<RowBlock> blocks;
  std::vector<std::vector<size_t>> by_block;  // event indices per block, in event order
};

// Notes of one kind beyond this many are summarised in one line (a trace may repeat an event
// thousands of times).
inline constexpr size_t kNotesOfAKind = 3;

// Phase 0. The report's frame: what the run is, one empty StageReport per stage, one EventResult
// per event. Throws AnalysisError when the run holds neither events nor missing ones.
AnalysisReport start_report(const RunView& run);

// Phase 1. Marks report.events[i].compared for every event that can be compared; notes in
// report.anomalies each event that cannot (event_problem, no rows) and each that repeats an
// earlier one's identity (both still compared). report.events must hold one entry per event.
ComparedEvents identify_events(const RunView& run, AnalysisReport& report);
// Why event `i` of the run cannot be compared ("" when it can): the rule identify_events applies.
std::string comparison_problem(const RunView& run, size_t i);

// Phase 2. Every compared event's rows against the reference of its row block, row blocks in
// parallel on `workers` threads (on the GPU in batches when the reference runs there). Returns
// [event][run.max_rows] row errors (the rows past an event's own left default). When the
// reference does not know its tolerance yet, also measures the naive baselines' errors and sets
// the correctness rule's tolerance from them.
std::vector<RowError> compare_events(const RunView& run, RunReference& reference, const ComparedEvents& events,
                                     unsigned workers = 0, const AnalysisProgress& progress = {});

// Phase 3. Each compared event's result (passes, worst ratio, failing rows, non-finite counts)
// and each stage's figures and convention, under report.tolerance.
void judge_events(const RunView& run, std::span<const RowError> row_errors, AnalysisReport& report);

// Phase 4. report.grids (per stage and (batch, head): worst ratio per query and key position,
// NaN where the trace held NaN, masked where no event wrote) and report.overview (per pair: the
// worst of the non-final stages), pooled over query rows beyond kMaxReportGridCells.
void build_error_grids(const RunView& run, std::span<const RowError> row_errors, AnalysisReport& report);

// Phase 5. run.missing into report.missing in the kernel's order, counted per stage; each
// stage's expected events and whether it was traced; dropped events noted as an anomaly.
void collect_missing_events(const RunView& run, AnalysisReport& report);

// Phase 6. report.first_divergence: the earliest, in the kernel's own order (order_key), of the
// failing events and the missing ones, with its failing rows and columns; and report.verdict.
void find_first_divergence(const RunView& run, const RunReference& reference, AnalysisReport& report);

}  // namespace ts
