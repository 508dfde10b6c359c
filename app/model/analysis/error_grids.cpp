// Phase 4 of the analysis (analysis_phases.h): the error grids, one per stage and (batch,
// head), a column per key position its events end at, and the overview of each pair. A cell
// holds the worst ratio of its rows, NaN where the trace held NaN (NaN wins over any ratio, so
// that it stays visible: the viewer gives it its own colour), and stays masked where no event
// wrote (absent_cells.h then says why).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "app/model/analysis/analysis_phases.h"
#include "app/model/analysis/event_identity.h"

namespace ts {
namespace {

constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();

// Worst of two cells, NaN winning (a NaN must stay visible).
float worst(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return kNaNF;
  return std::max(a, b);
}

// Per stage the sorted key ends its events reach (its columns), the overview's as the union over
// the non-final stages, and the row pooling that keeps the whole report within
// kMaxReportGridCells.
struct GridLayout {
  std::vector<std::vector<int64_t>> stage_columns;
  std::vector<int64_t> overview_columns;
  int64_t rows_per_cell = 1;
};

GridLayout lay_out_grids(const RunView& run, const AnalysisReport& rep) {
  GridLayout g;
  g.stage_columns.resize(run.num_stages());
  std::vector<std::set<std::pair<int32_t, int32_t>>> pairs(run.num_stages());
  std::set<std::pair<int32_t, int32_t>> overview_pairs;
  std::set<int64_t> overview;
  for (size_t i = 0; i < run.num_events(); ++i) {
    if (!rep.events[i].compared) continue;
    const EventHeader& h = run.headers[i];
    const StageInfo& st = run.stage_of(i);
    const int64_t end = event_key_end(h, st, run.attention);
    g.stage_columns[static_cast<size_t>(h.stage)].push_back(end);
    pairs[static_cast<size_t>(h.stage)].insert({h.batch, h.head});
    if (st.kind != StageKind::final) {
      overview.insert(end);
      overview_pairs.insert({h.batch, h.head});
    }
  }
  double cells = 0;
  for (size_t s = 0; s < g.stage_columns.size(); ++s) {
    auto& c = g.stage_columns[s];
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    cells += static_cast<double>(c.size()) * static_cast<double>(pairs[s].size());
  }
  g.overview_columns.assign(overview.begin(), overview.end());
  cells += static_cast<double>(g.overview_columns.size()) * static_cast<double>(overview_pairs.size());
  cells *= static_cast<double>(run.attention.seq_q);
  if (cells > static_cast<double>(kMaxReportGridCells))
    g.rows_per_cell = static_cast<int64_t>(std::ceil(cells / static_cast<double>(kMaxReportGridCells)));
  return g;
}

ErrorGrid new_grid(int32_t stage, int32_t batch, int32_t head, const std::vector<int64_t>& columns, int64_t seq_q,
                   int64_t rows_per_cell) {
  ErrorGrid g;
  g.stage = stage;
  g.batch = batch;
  g.head = head;
  g.column_keys = columns;
  g.rows_per_cell = rows_per_cell;
  g.grid.rows = (seq_q + rows_per_cell - 1) / rows_per_cell;
  g.grid.cols = std::max<int64_t>(1, static_cast<int64_t>(columns.size()));
  const size_t cells = static_cast<size_t>(g.grid.rows) * static_cast<size_t>(g.grid.cols);
  g.grid.values.assign(cells, 0.0f);
  g.grid.mask.assign(cells, 1);  // uncovered until an event writes the cell
  return g;
}

void put(ErrorGrid& g, int64_t query, int64_t col, float value) {
  const size_t cell = static_cast<size_t>((query / g.rows_per_cell) * g.grid.cols + col);
  g.grid.values[cell] = g.grid.mask[cell] ? value : worst(g.grid.values[cell], value);
  g.grid.mask[cell] = 0;
}

// The worst of the non-final stages of one pair, cell by cell, on the overview's columns.
void build_overview(AnalysisReport& rep, const GridLayout& layout) {
  std::map<std::pair<int32_t, int32_t>, ErrorGrid> by_pair;
  for (const ErrorGrid& g : rep.grids) {
    if (rep.stages[static_cast<size_t>(g.stage)].info.kind == StageKind::final) continue;
    auto [it, fresh] = by_pair.try_emplace({g.batch, g.head});
    ErrorGrid& o = it->second;
    if (fresh)
      o = new_grid(-1, g.batch, g.head, layout.overview_columns, rep.attention.seq_q, layout.rows_per_cell);
    for (int64_t c = 0; c < g.grid.cols; ++c) {
      const int64_t oc = o.column_of(g.column_keys[static_cast<size_t>(c)]);
      for (int64_t r = 0; r < g.grid.rows; ++r) {
        const size_t from = static_cast<size_t>(r * g.grid.cols + c);
        if (g.grid.mask[from]) continue;
        const size_t to = static_cast<size_t>(r * o.grid.cols + oc);
        o.grid.values[to] = o.grid.mask[to] ? g.grid.values[from] : worst(o.grid.values[to], g.grid.values[from]);
        o.grid.mask[to] = 0;
      }
    }
  }
  for (auto& [pair, g] : by_pair) rep.overview.push_back(std::move(g));
}

}  // namespace

void build_error_grids(const RunView& run, std::span<const RowError> row_errors, AnalysisReport& rep) {
  const size_t rows_cap = static_cast<size_t>(run.max_rows);
  const GridLayout layout = lay_out_grids(run, rep);
  std::map<std::tuple<int32_t, int32_t, int32_t>, size_t> grid_of;
  for (size_t i = 0; i < run.num_events(); ++i) {
    if (!rep.events[i].compared) continue;
    const EventHeader& h = run.headers[i];
    const StageInfo& stage = run.stage_of(i);
    const StageBars& bars = rep.tolerance.for_stage(stage);
    auto [git, fresh] = grid_of.try_emplace({h.stage, h.batch, h.head}, rep.grids.size());
    if (fresh)
      rep.grids.push_back(new_grid(h.stage, h.batch, h.head, layout.stage_columns[static_cast<size_t>(h.stage)],
                                   run.attention.seq_q, layout.rows_per_cell));
    ErrorGrid& grid = rep.grids[git->second];
    const int64_t col = grid.column_of(event_key_end(h, stage, run.attention));
    for (int32_t r = 0; r < h.rows; ++r) {
      const RowError& e = row_errors[i * rows_cap + static_cast<size_t>(r)];
      put(grid, int64_t{h.q_begin} + r, col, e.nan > 0 ? kNaNF : judge_row(e, bars).ratio);
    }
  }
  build_overview(rep, layout);
}

}  // namespace ts
