#include "app/model/viewer/event_grids.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace ts {
namespace {

bool valid_stage(int32_t stage, const std::vector<StageInfo>& stages) {
  return stage >= 0 && static_cast<size_t>(stage) < stages.size();
}

bool fails(const AnalysisReport& report, size_t event) {
  return event < report.events.size() && report.events[event].compared && !report.events[event].passes;
}

bool compared(const AnalysisReport& report, size_t event) {
  return event < report.events.size() && report.events[event].compared;
}

// A cell's value over its events: NaN when any held NaN, else the largest ratio.
float worse(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return std::max(a, b);
}

float event_value(const AnalysisReport& report, size_t event) {
  const EventResult& r = report.events[event];
  return r.nan > 0 ? std::numeric_limits<float>::quiet_NaN() : r.worst_ratio;
}

template <class T>
int64_t index_in_sorted(const std::vector<T>& sorted, const T& value) {
  const auto it = std::lower_bound(sorted.begin(), sorted.end(), value);
  return it != sorted.end() && *it == value ? it - sorted.begin() : -1;
}

}  // namespace

std::pair<int64_t, int64_t> grid_rows_of(int64_t q_begin, int64_t rows, int64_t rows_per_cell) {
  const int64_t per = std::max<int64_t>(1, rows_per_cell);
  const int64_t end = q_begin + std::max<int64_t>(1, rows);
  return {q_begin / per, (end + per - 1) / per};
}

bool grid_shows_stage(const ErrorGrid& grid, int32_t stage, const std::vector<StageInfo>& stages) {
  if (!valid_stage(stage, stages)) return false;
  if (grid.stage != kOverviewGrid) return stage == grid.stage;
  return stages[static_cast<size_t>(stage)].kind != StageKind::final;
}

std::optional<CellRect> grid_cells_of(const ErrorGrid& grid, const EventHeader& h, const std::vector<StageInfo>& stages,
                                      const AttentionSpec& spec) {
  if (h.batch != grid.batch || h.head != grid.head || !valid_stage(h.stage, stages)) return std::nullopt;
  const auto [row0, row1] = grid_rows_of(h.q_begin, h.rows, grid.rows_per_cell);
  if (row0 < 0 || row0 >= grid.grid.rows) return std::nullopt;
  CellRect r{row0, std::min(row1, grid.grid.rows), 0, 0};
  const StageInfo& stage = stages[static_cast<size_t>(h.stage)];
  if (grid.stage == kOverviewGrid && stage.kind == StageKind::final) {
    r.col1 = grid.grid.cols;
    return r;
  }
  if (!grid_shows_stage(grid, h.stage, stages)) return std::nullopt;
  const int64_t col = grid.column_of(event_key_end(h, stage, spec));
  if (col < 0 || col >= grid.grid.cols) return std::nullopt;
  r.col0 = col;
  r.col1 = col + 1;
  return r;
}

std::vector<size_t> events_at_grid_cell(const RunView& run, const AnalysisReport& report, const ErrorGrid& grid,
                                        int64_t row, int64_t col) {
  if (row < 0 || row >= grid.grid.rows || col < 0 || col >= static_cast<int64_t>(grid.column_keys.size())) return {};
  const int64_t per = std::max<int64_t>(1, grid.rows_per_cell);
  const int64_t q0 = row * per, q1 = q0 + per;  // the cell's queries
  const int64_t key_end = grid.column_keys[static_cast<size_t>(col)];
  std::vector<std::pair<OrderKey, size_t>> found;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (!compared(report, i) || h.batch != grid.batch || h.head != grid.head) continue;
    if (!grid_shows_stage(grid, h.stage, run.stages)) continue;
    if (int64_t{h.q_begin} >= q1 || int64_t{h.q_begin} + h.rows <= q0) continue;
    if (event_key_end(h, run.stage_of(i), run.attention) != key_end) continue;
    found.emplace_back(order_key(h, run.stages), i);
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<size_t> out;
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

std::optional<size_t> cell_event(std::span<const size_t> in_kernel_order, const AnalysisReport& report) {
  for (size_t e : in_kernel_order)
    if (fails(report, e)) return e;
  if (in_kernel_order.empty()) return std::nullopt;
  return in_kernel_order.front();
}

std::optional<size_t> event_for_grid_cell(const RunView& run, const AnalysisReport& report, const ErrorGrid& grid,
                                          int64_t row, int64_t col) {
  return cell_event(events_at_grid_cell(run, report, grid, row, col), report);
}

ColumnAxis key_column_axis(std::span<const int64_t> column_keys, int64_t seq_kv) {
  if (column_keys.empty()) return {"keys", {}};
  if (column_keys.size() == 1)
    return {column_keys.front() == seq_kv ? "all keys" : "keys up to " + std::to_string(column_keys.front() - 1), {}};
  ColumnAxis axis{"keys up to", {}};
  for (int64_t end : column_keys) axis.values.push_back(end - 1);
  return axis;
}

std::string query_axis_label(int64_t rows_per_cell) {
  if (rows_per_cell <= 1) return "query index";
  return "query index (worst of " + std::to_string(rows_per_cell) + " per row)";
}

std::optional<size_t> NavigatorGrid::event_at(int64_t row, int64_t col) const {
  if (row < 0 || col < 0 || row >= values.rows || col >= values.cols || events.empty()) return std::nullopt;
  const int64_t e = events[static_cast<size_t>(row * values.cols + col)];
  if (e < 0) return std::nullopt;
  return static_cast<size_t>(e);
}

std::optional<GridCell> NavigatorGrid::cell_of(const EventHeader& h, int64_t key_end) const {
  if (h.stage != stage || h.batch != batch || h.head != head || !omitted.empty()) return std::nullopt;
  const int64_t row = index_in_sorted(row_blocks, row_block(h));
  const int64_t col = index_in_sorted(column_keys, key_end);
  if (row < 0 || col < 0) return std::nullopt;
  return GridCell{row, col};
}

std::vector<NavigatorGrid> event_navigator(const RunView& run, const AnalysisReport& report, int32_t batch,
                                           int32_t head) {
  struct Placed {
    OrderKey order;
    size_t event;
    RowBlock rows;
    int64_t key_end;
  };
  std::vector<std::vector<Placed>> by_stage(run.num_stages());
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (!compared(report, i) || h.batch != batch || h.head != head || !valid_stage(h.stage, run.stages)) continue;
    by_stage[static_cast<size_t>(h.stage)].push_back(
        {order_key(h, run.stages), i, row_block(h), event_key_end(h, run.stage_of(i), run.attention)});
  }
  // Events the kernel never wrote get cells of their own ("never written": nothing to select).
  std::vector<std::vector<std::pair<RowBlock, int64_t>>> missing_by_stage(run.num_stages());
  for (const EventHeader& m : report.missing)
    if (m.batch == batch && m.head == head && valid_stage(m.stage, run.stages))
      missing_by_stage[static_cast<size_t>(m.stage)].emplace_back(
          row_block(m), event_key_end(m, run.stages[static_cast<size_t>(m.stage)], run.attention));
  std::vector<NavigatorGrid> out;
  for (size_t s = 0; s < by_stage.size(); ++s) {
    std::vector<Placed>& placed = by_stage[s];
    const auto& never_written = missing_by_stage[s];
    if (placed.empty() && never_written.empty()) continue;
    NavigatorGrid g;
    g.stage = static_cast<int32_t>(s);
    g.batch = batch;
    g.head = head;
    for (const Placed& p : placed) {
      g.row_blocks.push_back(p.rows);
      g.column_keys.push_back(p.key_end);
    }
    for (const auto& [rows, key_end] : never_written) {
      g.row_blocks.push_back(rows);
      g.column_keys.push_back(key_end);
    }
    std::sort(g.column_keys.begin(), g.column_keys.end());
    g.column_keys.erase(std::unique(g.column_keys.begin(), g.column_keys.end()), g.column_keys.end());
    std::sort(g.row_blocks.begin(), g.row_blocks.end());
    g.row_blocks.erase(std::unique(g.row_blocks.begin(), g.row_blocks.end()), g.row_blocks.end());
    const auto rows = static_cast<int64_t>(g.row_blocks.size()), cols = static_cast<int64_t>(g.column_keys.size());
    g.values.rows = rows;
    g.values.cols = cols;
    if (rows * cols > kMaxNavigatorCells) {
      g.omitted = std::to_string(rows) + " row blocks x " + std::to_string(cols) +
                  " key positions: too many to draw one cell per event (the error grid shows them)";
      g.values.rows = g.values.cols = 0;
      out.push_back(std::move(g));
      continue;
    }
    const size_t cells = static_cast<size_t>(rows * cols);
    g.values.values.assign(cells, 0.0f);
    // A cell with no event: its rows see no key at that position (no event was planned there).
    g.values.mask.assign(cells, static_cast<uint8_t>(AbsentCell::masked));
    g.events.assign(cells, -1);
    for (const auto& [rows_of, key_end] : never_written) {
      const int64_t r = index_in_sorted(g.row_blocks, rows_of), c = index_in_sorted(g.column_keys, key_end);
      g.values.mask[static_cast<size_t>(r * cols + c)] = static_cast<uint8_t>(AbsentCell::never_written);
    }
    // Each cell's events together, in the kernel's order within the cell.
    std::vector<std::pair<size_t, const Placed*>> by_cell;
    for (const Placed& p : placed) {
      const int64_t r = index_in_sorted(g.row_blocks, p.rows), c = index_in_sorted(g.column_keys, p.key_end);
      by_cell.emplace_back(static_cast<size_t>(r * cols + c), &p);
    }
    std::stable_sort(by_cell.begin(), by_cell.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->order < b.second->order;
    });
    std::vector<size_t> in_cell;
    for (size_t k = 0; k < by_cell.size();) {
      const size_t at = by_cell[k].first;
      in_cell.clear();
      float value = event_value(report, by_cell[k].second->event);
      for (; k < by_cell.size() && by_cell[k].first == at; ++k) {
        in_cell.push_back(by_cell[k].second->event);
        value = worse(value, event_value(report, by_cell[k].second->event));
      }
      g.values.values[at] = value;
      g.values.mask[at] = 0;
      g.events[at] = static_cast<int64_t>(*cell_event(in_cell, report));
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<std::pair<int32_t, int32_t>> traced_pairs_of(const RunView& run) {
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (const EventHeader& h : run.headers) pairs.insert({h.batch, h.head});
  return {pairs.begin(), pairs.end()};
}

const ErrorGrid* overview_grid_of(const AnalysisReport& report, int32_t batch, int32_t head) {
  for (const ErrorGrid& g : report.overview)
    if (g.batch == batch && g.head == head) return &g;
  // Only final-kind stages traced (the output alone): the first of them stands for the overview.
  for (const ErrorGrid& g : report.grids)
    if (g.batch == batch && g.head == head) return &g;
  return nullptr;
}

std::optional<EventHeader> divergence_header(const AnalysisReport& report) {
  if (!report.first_divergence.found) return std::nullopt;
  return report.first_divergence.header;
}

}  // namespace ts
