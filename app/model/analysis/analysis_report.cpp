#include "app/model/analysis/analysis_report.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ts {

int64_t ErrorGrid::column_of(int64_t key_end) const {
  const auto it = std::lower_bound(column_keys.begin(), column_keys.end(), key_end);
  if (it == column_keys.end() || *it != key_end) return column_keys.empty() ? 0 : -1;
  return it - column_keys.begin();
}

const std::string& AnalysisReport::stage_name(int32_t stage) const {
  static const std::string unknown = "?";
  return stage >= 0 && static_cast<size_t>(stage) < stage_table.size() ? stage_table[static_cast<size_t>(stage)].name
                                                                        : unknown;
}

const ErrorGrid* AnalysisReport::grid(int32_t stage, int32_t batch, int32_t head) const {
  for (const ErrorGrid& g : grids)
    if (g.stage == stage && g.batch == batch && g.head == head) return &g;
  return nullptr;
}

std::vector<float> AnalysisReport::error_by_query(int32_t stage, int32_t batch, int32_t head) const {
  const ErrorGrid* g = grid(stage, batch, head);
  if (!g) return {};
  std::vector<float> out(static_cast<size_t>(g->grid.rows), 0.0f);
  for (int64_t r = 0; r < g->grid.rows; ++r)
    for (int64_t c = 0; c < g->grid.cols; ++c) {
      const size_t at = static_cast<size_t>(r * g->grid.cols + c);
      if (g->grid.mask[at]) continue;
      const float v = g->grid.values[at];
      float& o = out[static_cast<size_t>(r)];
      if (std::isnan(v) || std::isnan(o)) o = std::numeric_limits<float>::quiet_NaN();
      else o = std::max(o, v);
    }
  return out;
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::clean: return "clean";
    case Verdict::divergence: return "divergence";
    case Verdict::not_compared: return "not_compared";
  }
  return "divergence";
}

}  // namespace ts
