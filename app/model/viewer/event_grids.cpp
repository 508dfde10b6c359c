#include "app/model/viewer/event_grids.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

namespace ts {

int32_t event_column(const EventKey& k) {
  switch (static_cast<Stage>(k.stage)) {
    case Stage::fa1_step: return k.step;
    case Stage::splitk_partial:
    case Stage::splitk_reduce: return k.split;
    case Stage::final_output: return 0;
  }
  return 0;
}

int32_t stage_columns(Stage s, const Tiling& t) {
  switch (s) {
    case Stage::fa1_step: return std::max(1, t.num_kv_tiles);
    case Stage::splitk_partial:
    case Stage::splitk_reduce: return std::max(1, t.num_splits);
    case Stage::final_output: return 1;
  }
  return 1;
}

std::string stage_column_axis(Stage s) {
  switch (s) {
    case Stage::fa1_step: return "kv tile";
    case Stage::splitk_partial:
    case Stage::splitk_reduce: return "split";
    case Stage::final_output: return "output";
  }
  return "column";
}

std::optional<CellRect> grid_cells_of(const EventKey& key, const Tiling& tiling, GridStage grid, int32_t batch,
                                      int32_t head, int64_t grid_cols) {
  if (key.batch != batch || key.head != head || key.q_tile < 0 || key.q_tile >= tiling.num_q_tiles) return std::nullopt;
  const auto stage = static_cast<Stage>(key.stage);
  CellRect r;
  r.row0 = static_cast<int64_t>(key.q_tile) * tiling.block_m;
  r.row1 = r.row0 + tiling.rows_in_q_tile(key.q_tile);
  if (grid && *grid != stage) return std::nullopt;
  if (!grid && stage == Stage::final_output) {
    r.col0 = 0;
    r.col1 = grid_cols;
    return r;
  }
  const int64_t c = event_column(key);
  if (c < 0 || c >= grid_cols) return std::nullopt;
  r.col0 = c;
  r.col1 = c + 1;
  return r;
}

std::optional<size_t> event_for_grid_cell(const RunView& run, const AnalysisReport& report, GridStage grid,
                                          int32_t batch, int32_t head, int64_t query, int64_t column) {
  const Tiling& t = run.tiling;
  if (query < 0 || query >= t.seq_q || t.block_m <= 0) return std::nullopt;
  const int32_t q_tile = static_cast<int32_t>(query / t.block_m);
  std::optional<size_t> first, first_failing;
  OrderKey first_key{}, failing_key{};
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventKey k = event_key(run.headers[i]);
    if (k.batch != batch || k.head != head || k.q_tile != q_tile) continue;
    const auto stage = static_cast<Stage>(k.stage);
    if (grid ? stage != *grid : stage == Stage::final_output) continue;
    if (event_column(k) != column) continue;
    const OrderKey o = order_key(k, t);
    if (!first || o < first_key) first = i, first_key = o;
    const bool fails = i < report.events.size() && report.events[i].compared && !report.events[i].passes;
    if (fails && (!first_failing || o < failing_key)) first_failing = i, failing_key = o;
  }
  return first_failing ? first_failing : first;
}

std::optional<size_t> TileGrid::event_at(int64_t row, int64_t col) const {
  if (row < 0 || col < 0 || row >= values.rows || col >= values.cols) return std::nullopt;
  const int64_t e = events[static_cast<size_t>(row * values.cols + col)];
  if (e < 0) return std::nullopt;
  return static_cast<size_t>(e);
}

std::optional<GridCell> TileGrid::cell_of(const EventKey& key) const {
  if (key.stage != static_cast<int32_t>(stage) || key.batch != batch || key.head != head) return std::nullopt;
  const int64_t col = event_column(key);
  if (key.q_tile < 0 || key.q_tile >= values.rows || col < 0 || col >= values.cols) return std::nullopt;
  return GridCell{key.q_tile, col};
}

std::vector<TileGrid> tile_navigator(const RunView& run, const AnalysisReport& report, int32_t batch, int32_t head) {
  const Tiling& t = run.tiling;
  std::array<std::optional<TileGrid>, kNumStages> grids;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventKey k = event_key(run.headers[i]);
    if (k.batch != batch || k.head != head || k.stage < 0 || k.stage >= kNumStages) continue;
    const auto stage = static_cast<Stage>(k.stage);
    std::optional<TileGrid>& g = grids[static_cast<size_t>(k.stage)];
    if (!g) {
      g.emplace();
      g->stage = stage;
      g->batch = batch;
      g->head = head;
      g->col_axis = stage_column_axis(stage);
      g->values.rows = std::max(1, t.num_q_tiles);
      g->values.cols = stage_columns(stage, t);
      const size_t cells = static_cast<size_t>(g->values.rows * g->values.cols);
      g->values.values.assign(cells, 0.0f);
      g->values.mask.assign(cells, 1);
      g->events.assign(cells, -1);
    }
    const std::optional<GridCell> cell = g->cell_of(k);
    if (!cell) continue;
    const size_t at = static_cast<size_t>(cell->row * g->values.cols + cell->col);
    float v = 0.0f;
    if (i < report.events.size()) {
      const EventResult& r = report.events[i];
      v = r.nan > 0 ? std::numeric_limits<float>::quiet_NaN() : r.worst_ratio;
    }
    // Two events on one cell (a damaged trace): the worse is shown, the first kept for clicks.
    if (g->events[at] < 0) g->events[at] = static_cast<int64_t>(i);
    float& cellv = g->values.values[at];
    if (g->values.mask[at]) cellv = v;
    else if (std::isnan(v) || std::isnan(cellv)) cellv = std::numeric_limits<float>::quiet_NaN();
    else cellv = std::max(cellv, v);
    g->values.mask[at] = 0;
  }
  std::vector<TileGrid> out;
  for (auto& g : grids)
    if (g) out.push_back(std::move(*g));
  return out;
}

std::vector<std::pair<int32_t, int32_t>> traced_pairs_of(const RunView& run) {
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (const EventHeader& h : run.headers) pairs.insert({h.batch, h.head});
  return {pairs.begin(), pairs.end()};
}

std::optional<EventKey> divergence_key(const AnalysisReport& report) {
  if (!report.first_divergence.found) return std::nullopt;
  return report.first_divergence.key;
}

}  // namespace ts
