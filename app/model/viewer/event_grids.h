// The overview's grids and the events their cells stand for, so that a click on a cell selects
// an event and the selected event and the first divergence can be marked on them:
//   - error grids (analysis_report.h): query index x column (FA-1: kv tile; Split-K: split;
//     final: one column), per stage, or the overview (worst of the intermediate stages);
//   - the tile navigator: query tile x column per stage, each cell one event, coloured by the
//     event's worst error / tolerance (NaN when it held NaN), masked where no event was traced.
// No GL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/float_grid.h"
#include "app/model/run_view.h"

namespace ts {

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

// The column of an event in its stage's grids (kv tile, split, or 0 for the final output), and
// how many columns and what they are called.
int32_t event_column(const EventKey& key);
int32_t stage_columns(Stage stage, const Tiling& tiling);
std::string stage_column_axis(Stage stage);

// Which error grid: one stage's, or the overview (nullopt).
using GridStage = std::optional<Stage>;

// The cells of an error grid of (batch, head) that an event covers: its query rows, in its
// column (an event of the final output covers every column of the overview). Nothing when
// the event is of another pair or a stage the grid does not show.
std::optional<CellRect> grid_cells_of(const EventKey& key, const Tiling& tiling, GridStage grid, int32_t batch,
                                      int32_t head, int64_t grid_cols);

// The event a click on cell (query, column) of an error grid selects: of that stage (the
// overview: any intermediate stage) and that query's tile and column; the earliest failing one
// in the kernels' order, else the earliest. Nothing where no event covers the cell.
std::optional<size_t> event_for_grid_cell(const RunView& run, const AnalysisReport& report, GridStage grid,
                                          int32_t batch, int32_t head, int64_t query, int64_t column);

struct TileGrid {
  Stage stage = Stage::fa1_step;
  int32_t batch = 0, head = 0;
  std::string col_axis;            // "kv tile", "split", "output"
  FloatGrid values;                // query tiles x columns: worst ratio; NaN if the event held NaN; masked: none
  std::vector<int64_t> events;     // event index per cell, -1 where none

  std::optional<size_t> event_at(int64_t row, int64_t col) const;
  // The cell of an event of this grid's stage and pair.
  std::optional<GridCell> cell_of(const EventKey& key) const;
};

// One grid per stage the run traced for (batch, head), in the kernels' stage order.
std::vector<TileGrid> tile_navigator(const RunView& run, const AnalysisReport& report, int32_t batch, int32_t head);

// The (batch, head) pairs that have events, sorted.
std::vector<std::pair<int32_t, int32_t>> traced_pairs_of(const RunView& run);

// The divergence's key (the missing event's, or the first failing one's), when there is one.
std::optional<EventKey> divergence_key(const AnalysisReport& report);

}  // namespace ts
