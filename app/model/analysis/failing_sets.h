// Where a run is wrong, as sets: per stage, the batches, heads, query rows, splits, steps (each
// event's number in its block: event_identity.h, kEventOfItsBlock), key ends and head-dim columns
// of its failing events among those compared (FailingSets), and the rows that hold NaN or an
// infinity where the reference is finite (NonFiniteRow) — so that a
// report says "batch 1 only, all heads, all events of their blocks" or "queries 128-255, split 1
// only" rather than naming the first event alone. Also the text of such sets.
//
// Rows and their quantities come from the row errors of the whole run; head-dim columns need
// each cell against its bar, so they are taken from per-cell comparisons of the failing events
// (all of them, or those of evenly spaced row blocks within kColumnCellBudget cells and
// kColumnReferenceBudget of references:
// `column_events_checked` says how many).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/analysis/state_compare.h"
#include "app/model/run_view.h"

namespace ts {

inline constexpr int64_t kColumnCellBudget = int64_t{1} << 21;
// The references of the row blocks those events read, in multiply-adds (rows x keys x head_dim).
inline constexpr int64_t kColumnReferenceBudget = int64_t{1} << 28;

// Fills every StageReport's `failing` and the report's `non_finite_rows`; `row_errors` is the
// comparison phase's [event][max_rows] array, the report already judged.
void measure_failing_sets(const RunView& run, const RunReference& reference, std::span<const RowError> row_errors,
                          AnalysisReport& report);

// The names of FailingSets' dimensions, for the where line and the JSON report's texts alike
// (steps: kEventOfItsBlock).
inline constexpr IndexNames kBatchNames{"batch", "batches"}, kHeadNames{"head", "heads"},
    kQueryNames{"query", "queries"}, kSplitNames{"split", "splits"}, kKeyNames{"key", "keys"},
    kColumnNames{"head-dim column", "head-dim columns"};

// "batch 1 only (of 0-1)", "all heads (0-3)", "queries 128-255 (of 0-255)", "head 0", "events
// 1-3 of their blocks (of 0-3)": one dimension, its index named by `names`.
std::string index_set_text(const IndexSet& set, const IndexNames& names);

// The stage's failing sets in one line: "batch 1 only (of 0-1), all heads (0-1), all queries
// (0-39), event 3 of its block only (of 0-3), all 32 head-dim columns; m, l and O wrong".
// Dimensions with one compared value and nothing to tell are left out.
std::string failing_sets_text(const FailingSets& sets);

// "m, l and O" for QuantityBit bits.
std::string quantities_text(uint8_t failed);

}  // namespace ts
