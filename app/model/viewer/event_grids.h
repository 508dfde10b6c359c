// Which event is which cell of the viewer's grids: the one module that says so, for any stage
// table a trace declares. The panels draw the grids and turn clicks into cells; everything about
// which event stands where is decided here.
//
//   - Error grids (analysis_report.h, made by the analysis): query index x column, per stage and
//     (batch, head), or the overview (stage kOverviewGrid: the worst of the non-final stages). A
//     column is a key position: the events whose key ranges end at ErrorGrid::column_keys[c] (a
//     running state's steps over the keys, a split's state at its split's end, a reduce after
//     merging up to there). With rows_per_cell > 1 a grid row pools that many queries.
//     An event covers the grid rows its query rows fall in, in the column of its key end.
//   - The event navigator: per stage of a (batch, head), a row per row block (the events' query
//     rows) and a column per key end, each cell the event(s) of that row block ending there,
//     coloured by their worst error / tolerance.
//
// A cell that stands for several events (the overview lines up every non-final stage on the same
// key positions; a user's stage may hold two states ending at one key) selects the first failing
// of them in the kernel's own order, else the first: where to look first. No GL.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/float_grid.h"
#include "app/model/run_view.h"

namespace ts {

// ErrorGrid::stage of a (batch, head)'s overview grid.
inline constexpr int32_t kOverviewGrid = -1;

// One cell of a grid.
struct GridCell {
  int64_t row = 0, col = 0;
  friend bool operator==(const GridCell&, const GridCell&) = default;
};

// A block of cells [row0, row1) x [col0, col1).
struct CellRect {
  int64_t row0 = 0, row1 = 0, col0 = 0, col1 = 0;
  bool contains(int64_t r, int64_t c) const { return r >= row0 && r < row1 && c >= col0 && c < col1; }
  friend bool operator==(const CellRect&, const CellRect&) = default;
};

// The grid rows [first, second) that query rows [q_begin, q_begin + rows) fall in when a grid row
// pools `rows_per_cell` queries (an event of no rows still marks the row of q_begin).
std::pair<int64_t, int64_t> grid_rows_of(int64_t q_begin, int64_t rows, int64_t rows_per_cell);

// Whether `grid` shows events of `stage`: its own stage's, or for the overview any non-final one.
bool grid_shows_stage(const ErrorGrid& grid, int32_t stage, const std::vector<StageInfo>& stages);

// The cells of `grid` that an event (written, or planned and missing) covers: the grid rows its
// query rows fall in, in the column of its key end. A final-kind event on the overview covers
// every column (the output depends on every key; the overview holds no final stage of its own).
// Nothing when the event is of another (batch, head), of a stage the grid does not show, or ends
// at a key the grid has no column for.
std::optional<CellRect> grid_cells_of(const ErrorGrid& grid, const EventHeader& h, const std::vector<StageInfo>& stages,
                                      const AttentionSpec& spec);

// The compared events that cell (row, col) of `grid` stands for, in the kernel's own order: of the
// grid's stage (the overview: every non-final stage) and (batch, head), with a query row in the
// cell's rows, ending at the column's key.
std::vector<size_t> events_at_grid_cell(const RunView& run, const AnalysisReport& report, const ErrorGrid& grid,
                                        int64_t row, int64_t col);

// Of events given in the kernel's own order, the one their cell selects: the first failing, else
// the first (nothing for none).
std::optional<size_t> cell_event(std::span<const size_t> in_kernel_order, const AnalysisReport& report);

// The event a click on cell (row, col) of `grid` selects: cell_event of events_at_grid_cell.
std::optional<size_t> event_for_grid_cell(const RunView& run, const AnalysisReport& report, const ErrorGrid& grid,
                                          int64_t row, int64_t col);

// How to label a grid's axes. Columns are key positions: one column reads "all keys" (it ends at
// seq_kv) or "keys up to 4095", without numbers; several are labelled "keys up to" with each
// column's last key as its number.
struct ColumnAxis {
  std::string label;
  std::vector<int64_t> values;  // the number under each column; empty: no numbers
};
ColumnAxis key_column_axis(std::span<const int64_t> column_keys, int64_t seq_kv);
// "query index", or "query index (worst of 4 per row)" for pooled rows.
std::string query_axis_label(int64_t rows_per_cell);

// One stage's events of one (batch, head): a row per row block, a column per key end.
struct NavigatorGrid {
  int32_t stage = 0;
  int32_t batch = 0, head = 0;
  std::vector<RowBlock> row_blocks;   // row r: these query rows (sorted)
  std::vector<int64_t> column_keys;   // column c: events whose keys end here (sorted)
  // Worst error / tolerance of the cell's events (NaN when one held NaN). No event: absent,
  // AbsentCell::never_written where the kernel was to write one and did not, else masked.
  FloatGrid values;
  std::vector<int64_t> events;        // per cell: the event a click selects (cell_event); -1: none
  // Not empty when the stage has too many row blocks x key ends to draw as cells (then `values`
  // and `events` are empty): what to say instead.
  std::string omitted;

  std::optional<size_t> event_at(int64_t row, int64_t col) const;
  // The cell of an event of this grid's stage and pair that ends at `key_end`.
  std::optional<GridCell> cell_of(const EventHeader& h, int64_t key_end) const;
};

// Most cells a navigator grid is drawn with; a stage beyond it is listed with `omitted` set.
inline constexpr int64_t kMaxNavigatorCells = int64_t{1} << 20;

// One grid per stage with compared or never-written events of (batch, head), in stage table order.
std::vector<NavigatorGrid> event_navigator(const RunView& run, const AnalysisReport& report, int32_t batch,
                                           int32_t head);

// The overview grid of (batch, head): the report's worst of its non-final stages; when the pair has
// no non-final stage, the first grid it has (a trace of the output alone). nullptr when none.
const ErrorGrid* overview_grid_of(const AnalysisReport& report, int32_t batch, int32_t head);

// The (batch, head) pairs that have events, sorted.
std::vector<std::pair<int32_t, int32_t>> traced_pairs_of(const RunView& run);

// The first divergence's event (the missing event's planned identity when it was never
// written), when there is one.
std::optional<EventHeader> divergence_header(const AnalysisReport& report);

}  // namespace ts
