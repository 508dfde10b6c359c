#include "app/model/analysis/absent_cells.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/model/analysis/event_identity.h"
#include "instrumentation/trace/trace_file.h"

namespace ts {
namespace {

// [begin, end) of a filter range written as [begin, end | null]; nothing when unreadable.
std::optional<std::pair<int64_t, int64_t>> json_range(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return std::nullopt;
  const nlohmann::json& r = j.at(key);
  if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer()) return std::nullopt;
  const int64_t begin = r[0].get<int64_t>();
  const int64_t end = r[1].is_number_integer() ? r[1].get<int64_t>() : std::numeric_limits<int64_t>::max();
  if (begin < 0 || end < begin) return std::nullopt;
  return std::pair{begin, end};
}

// The grid with `key_end` among its columns (a masked column inserted where it sorts).
void add_column(ErrorGrid& g, int64_t key_end) {
  const auto at = std::lower_bound(g.column_keys.begin(), g.column_keys.end(), key_end);
  if (at != g.column_keys.end() && *at == key_end) return;
  const int64_t inserted = at - g.column_keys.begin();
  // A grid of no column yet has one placeholder column (new_grid): it becomes this one.
  if (g.column_keys.empty()) {
    g.column_keys.push_back(key_end);
    return;
  }
  g.column_keys.insert(at, key_end);
  FloatGrid wider;
  wider.rows = g.grid.rows;
  wider.cols = g.grid.cols + 1;
  wider.values.assign(static_cast<size_t>(wider.rows * wider.cols), 0.0f);
  wider.mask.assign(wider.values.size(), static_cast<uint8_t>(AbsentCell::masked));
  for (int64_t r = 0; r < g.grid.rows; ++r)
    for (int64_t c = 0; c < g.grid.cols; ++c) {
      const size_t from = static_cast<size_t>(r * g.grid.cols + c);
      const size_t to = static_cast<size_t>(r * wider.cols + (c < inserted ? c : c + 1));
      wider.values[to] = g.grid.values[from];
      wider.mask[to] = g.grid.mask.empty() ? 0 : g.grid.mask[from];
    }
  g.grid = std::move(wider);
}

bool grid_shows(const ErrorGrid& g, const EventHeader& h, const std::vector<StageInfo>& stages) {
  if (h.batch != g.batch || h.head != g.head || h.stage < 0 || static_cast<size_t>(h.stage) >= stages.size())
    return false;
  if (g.stage >= 0) return h.stage == g.stage;
  return stages[static_cast<size_t>(h.stage)].kind != StageKind::final;
}

void mark_grid(ErrorGrid& g, const AnalysisReport& r, std::pair<int64_t, int64_t> traced) {
  const int64_t per = std::max<int64_t>(1, g.rows_per_cell);
  // Never-written events get their key positions first, so that they have cells to mark.
  std::vector<const EventHeader*> missing;
  for (const EventHeader& m : r.missing)
    if (grid_shows(g, m, r.stage_table)) {
      missing.push_back(&m);
      add_column(g, event_key_end(m, r.stage_table[static_cast<size_t>(m.stage)], r.attention));
    }
  if (g.grid.mask.empty()) return;  // every cell holds a value
  // Rows outside the traced queries were filtered out; any other empty cell is masked.
  for (int64_t row = 0; row < g.grid.rows; ++row) {
    const int64_t q0 = row * per, q1 = std::min(q0 + per, int64_t{r.attention.seq_q});
    const bool filtered = q1 <= traced.first || q0 >= traced.second;
    const auto code = static_cast<uint8_t>(filtered ? AbsentCell::not_traced : AbsentCell::masked);
    for (int64_t c = 0; c < g.grid.cols; ++c) {
      uint8_t& m = g.grid.mask[static_cast<size_t>(row * g.grid.cols + c)];
      if (m != 0) m = code;
    }
  }
  for (const EventHeader* m : missing) {
    const int64_t col = g.column_of(event_key_end(*m, r.stage_table[static_cast<size_t>(m->stage)], r.attention));
    if (col < 0 || col >= g.grid.cols) continue;
    const int64_t row0 = m->q_begin / per;
    const int64_t row1 = std::min<int64_t>(g.grid.rows, (int64_t{m->q_begin} + std::max(m->rows, 1) + per - 1) / per);
    for (int64_t row = row0; row < row1; ++row) {
      uint8_t& code = g.grid.mask[static_cast<size_t>(row * g.grid.cols + col)];
      if (code != 0) code = static_cast<uint8_t>(AbsentCell::never_written);
    }
  }
}

}  // namespace

std::pair<int64_t, int64_t> traced_query_rows(const std::map<std::string, std::string>& metadata,
                                              const std::optional<Tiling>& tiling, int64_t seq_q) {
  const std::pair<int64_t, int64_t> all{0, seq_q};
  const auto it = metadata.find(std::string(trace_meta::trace_filter));
  if (it == metadata.end()) return all;
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  if (j.is_discarded()) return all;
  if (const auto q = json_range(j, "queries")) return {std::min(q->first, seq_q), std::min(q->second, seq_q)};
  // Format 1 filtered by query tile.
  if (const auto t = json_range(j, "q_tile"); t && tiling && tiling->block_m > 0) {
    const int64_t m = tiling->block_m;
    const int64_t end = t->second > seq_q / m + 1 ? seq_q : t->second * m;
    return {std::min(t->first * m, seq_q), std::min(end, seq_q)};
  }
  return all;
}

void mark_absent_cells(AnalysisReport& report) {
  const auto traced = traced_query_rows(report.metadata, report.tiling, report.attention.seq_q);
  for (ErrorGrid& g : report.grids) mark_grid(g, report, traced);
  for (ErrorGrid& g : report.overview) mark_grid(g, report, traced);
}

}  // namespace ts
