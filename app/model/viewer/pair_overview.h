// The decode overview: when a run has few query rows per (batch, head) (decode: one to a few),
// a per-pair grid is a strip of one to a few rows, and one pair at a time hides the rest of the
// batch. Then the overview is one grid of every traced pair at once: a row per (batch, query
// head), a column per key position of the pairs' overview grids (a split's end for the reduce and
// the partials, a kv tile's end for a tile stage), each cell the worst error / tolerance over the
// pair's query rows there (NaN when one held NaN). Rows go by batch, then kv head, then query
// head, so the query heads that share a kv head (GQA) sit side by side as a group, named by its
// label ("kv head 0: heads 0-3"). The first divergence is a cell; a click on a cell selects the event the pair's own overview grid would
// select for that column (event_grids.h). No GL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/model/viewer/event_grids.h"

namespace ts {

// Most query rows per (batch, head) for which the overview shows every pair as one grid: a pair's
// own grid of this many rows says little at a glance, and a row per pair of more rows would no
// longer be a summary.
inline constexpr int64_t kFewQueryRows = 8;

// Whether the overview of `run` is the all-pairs grid: few query rows and more than one pair.
bool shows_pair_overview(const RunView& run);

// Rows sharing one kv head of one batch: the query heads of a GQA group (one row each for MHA).
struct PairGroup {
  int64_t row0 = 0, row1 = 0;  // rows [row0, row1)
  int32_t batch = 0;
  int64_t kv_head = 0;
  std::string label;  // "kv head 0: heads 0-3" (its rows' query heads, heads_text)
};

// Query heads as few words: "head 5", "heads 0-3", "heads 0, 2, 4-6" (sorted, runs joined).
std::string heads_text(std::vector<int32_t> heads);

struct PairOverview {
  std::vector<std::pair<int32_t, int32_t>> pairs;  // row r: this (batch, query head)
  std::vector<int64_t> column_keys;                // column c: key ranges ending here (sorted)
  FloatGrid values;  // rows = pairs, cols = column_keys; absent cells carry their AbsentCell
  std::vector<PairGroup> groups;  // in row order, covering every row
  std::optional<GridCell> divergence;  // the first divergence's cell, when it has one

  // The row of a pair, or -1.
  int64_t row_of(int32_t batch, int32_t head) const;
  // The cell of an event (its pair's row, its key end's column; a final-kind event, which
  // depends on every key, has no single column: the last one). Nothing for an event of a pair,
  // stage or key end the grid does not show.
  std::optional<GridCell> cell_of(const RunView& run, const EventHeader& h) const;
};

// Built from the report's per-pair overview grids (overview_grid_of).
PairOverview pair_overview(const RunView& run, const AnalysisReport& report);

// The event a click on (row, col) selects: over the pair's overview grid's rows in that column,
// the first failing event in the kernel's order, else the first (cell_event). Nothing outside
// the grid or for a cell with no event.
std::optional<size_t> pair_overview_event(const PairOverview& o, const RunView& run, const AnalysisReport& report,
                                          int64_t row, int64_t col);

}  // namespace ts
