#include "app/model/viewer/pair_overview.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

namespace ts {
namespace {

// Of a column's cells with no value, the one the pair's cell says: a never-written event is a bug
// and must not hide behind a masked row; otherwise the first row's reason.
uint8_t absent_of(uint8_t so_far, uint8_t cell) {
  if (so_far == static_cast<uint8_t>(AbsentCell::never_written)) return so_far;
  if (cell == static_cast<uint8_t>(AbsentCell::never_written) || so_far == 0) return cell;
  return so_far;
}

}  // namespace

std::string heads_text(std::vector<int32_t> heads) {
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  std::string out = heads.size() == 1 ? "head " : "heads ";
  for (size_t i = 0; i < heads.size();) {
    size_t j = i;
    while (j + 1 < heads.size() && heads[j + 1] == heads[j] + 1) ++j;
    out += (i ? ", " : "") + std::to_string(heads[i]);
    if (j > i) out += "-" + std::to_string(heads[j]);
    i = j + 1;
  }
  return out;
}

bool shows_pair_overview(const RunView& run) {
  return run.attention.seq_q <= kFewQueryRows && traced_pairs_of(run).size() > 1;
}

int64_t PairOverview::row_of(int32_t batch, int32_t head) const {
  for (size_t r = 0; r < pairs.size(); ++r)
    if (pairs[r].first == batch && pairs[r].second == head) return static_cast<int64_t>(r);
  return -1;
}

std::optional<GridCell> PairOverview::cell_of(const RunView& run, const EventHeader& h) const {
  const int64_t row = row_of(h.batch, h.head);
  if (row < 0 || h.stage < 0 || static_cast<size_t>(h.stage) >= run.num_stages() || column_keys.empty())
    return std::nullopt;
  const StageInfo& stage = run.stages[static_cast<size_t>(h.stage)];
  if (stage.kind == StageKind::final) return GridCell{row, static_cast<int64_t>(column_keys.size()) - 1};
  const int64_t key_end = event_key_end(h, stage, run.attention);
  const auto it = std::lower_bound(column_keys.begin(), column_keys.end(), key_end);
  if (it == column_keys.end() || *it != key_end) return std::nullopt;
  return GridCell{row, it - column_keys.begin()};
}

PairOverview pair_overview(const RunView& run, const AnalysisReport& report) {
  PairOverview o;
  const AttentionSpec& spec = run.attention;
  const int64_t heads_q = std::max<int64_t>(1, spec.heads_q);
  const int64_t heads_kv = spec.heads_kv >= 1 && heads_q % spec.heads_kv == 0 ? spec.heads_kv : heads_q;
  const auto kv_head = [&](int32_t head) { return ts::kv_head_of<int64_t>(head, heads_q, heads_kv); };

  // Rows: by batch, then kv head, then query head (a trace's heads may be any of the group's).
  o.pairs = traced_pairs_of(run);
  std::stable_sort(o.pairs.begin(), o.pairs.end(), [&](const auto& a, const auto& b) {
    return std::tuple(a.first, kv_head(a.second), a.second) < std::tuple(b.first, kv_head(b.second), b.second);
  });
  for (size_t r = 0; r < o.pairs.size(); ++r) {
    const auto [batch, head] = o.pairs[r];
    if (o.groups.empty() || o.groups.back().batch != batch || o.groups.back().kv_head != kv_head(head))
      o.groups.push_back({static_cast<int64_t>(r), static_cast<int64_t>(r), batch, kv_head(head), {}});
    o.groups.back().row1 = static_cast<int64_t>(r) + 1;
  }
  for (PairGroup& g : o.groups) {
    std::vector<int32_t> heads;
    for (int64_t r = g.row0; r < g.row1; ++r) heads.push_back(o.pairs[static_cast<size_t>(r)].second);
    g.label = "kv head " + std::to_string(g.kv_head) + ": " + heads_text(std::move(heads));
  }

  std::vector<const ErrorGrid*> grids;
  std::set<int64_t> keys;
  for (const auto& [batch, head] : o.pairs) {
    grids.push_back(overview_grid_of(report, batch, head));
    if (grids.back()) keys.insert(grids.back()->column_keys.begin(), grids.back()->column_keys.end());
  }
  o.column_keys.assign(keys.begin(), keys.end());
  if (o.pairs.empty() || o.column_keys.empty()) return o;

  const int64_t cols = static_cast<int64_t>(o.column_keys.size());
  o.values.rows = static_cast<int64_t>(o.pairs.size());
  o.values.cols = cols;
  o.values.values.assign(static_cast<size_t>(o.values.rows * cols), 0.0f);
  o.values.mask.assign(o.values.values.size(), static_cast<uint8_t>(AbsentCell::not_traced));
  for (int64_t r = 0; r < o.values.rows; ++r) {
    const ErrorGrid* g = grids[static_cast<size_t>(r)];
    if (!g) continue;
    const FloatGridView v = g->view();
    for (int64_t gc = 0; gc < v.cols && gc < static_cast<int64_t>(g->column_keys.size()); ++gc) {
      const auto it = std::lower_bound(o.column_keys.begin(), o.column_keys.end(), g->column_keys[static_cast<size_t>(gc)]);
      const size_t at = static_cast<size_t>(r * cols + (it - o.column_keys.begin()));
      bool any = false;
      float worst = 0;
      uint8_t absent = 0;
      for (int64_t gr = 0; gr < v.rows; ++gr) {
        if (v.masked(gr, gc)) {
          absent = absent_of(absent, v.absent(gr, gc));
          continue;
        }
        const float x = v.at(gr, gc);
        worst = any && (std::isnan(worst) || std::isnan(x)) ? std::numeric_limits<float>::quiet_NaN()
                                                            : (any ? std::max(worst, x) : x);
        any = true;
      }
      // A never-written event anywhere in the column outranks the values beside it: it is a bug.
      if (any && absent != static_cast<uint8_t>(AbsentCell::never_written)) {
        o.values.values[at] = worst;
        o.values.mask[at] = 0;
      } else {
        o.values.mask[at] = absent ? absent : static_cast<uint8_t>(AbsentCell::masked);
      }
    }
  }
  if (const auto d = divergence_header(report)) o.divergence = o.cell_of(run, *d);
  return o;
}

std::optional<size_t> pair_overview_event(const PairOverview& o, const RunView& run, const AnalysisReport& report,
                                          int64_t row, int64_t col) {
  if (row < 0 || col < 0 || row >= static_cast<int64_t>(o.pairs.size()) ||
      col >= static_cast<int64_t>(o.column_keys.size()))
    return std::nullopt;
  const auto [batch, head] = o.pairs[static_cast<size_t>(row)];
  const ErrorGrid* g = overview_grid_of(report, batch, head);
  if (!g) return std::nullopt;
  const int64_t gc = g->column_of(o.column_keys[static_cast<size_t>(col)]);
  if (gc < 0) return std::nullopt;
  // Every query row's events at that key, back in the kernel's order across rows.
  std::vector<std::pair<OrderKey, size_t>> found;
  for (int64_t gr = 0; gr < g->grid.rows; ++gr)
    for (size_t e : events_at_grid_cell(run, report, *g, gr, gc))
      found.emplace_back(order_key(run.headers[e], run.stages), e);
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  std::vector<size_t> events;
  for (const auto& f : found) events.push_back(f.second);
  return cell_event(events, report);
}

}  // namespace ts
