#include "app/model/analysis/analyze_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/naive_baseline.h"
#include "app/model/analysis/parallel_for.h"
#include "app/model/analysis/symptoms.h"

namespace ts {
namespace {

constexpr float kInfF = std::numeric_limits<float>::infinity();

std::string describe_key(const EventKey& k) {
  std::string s = stage_name(k.stage) + " batch " + std::to_string(k.batch) + " head " + std::to_string(k.head) +
                  " q_tile " + std::to_string(k.q_tile);
  if (k.stage == static_cast<int32_t>(Stage::fa1_step)) s += " kv tile " + std::to_string(k.step);
  if (k.split >= 0) s += " split " + std::to_string(k.split);
  return s;
}

void add_quantity(QuantityStats& q, float err, float ref, const QuantityBar& bar, float l_ref) {
  const float ratio = bar_ratio(err, bar.bar(ref, l_ref));
  q.max_abs = std::max<double>(q.max_abs, err);
  const double rel = err == 0.0f ? 0.0 : (ref > 0.0f ? static_cast<double>(err) / ref : kInfF);
  q.max_rel = std::max(q.max_rel, rel);
  q.max_ratio = std::max<double>(q.max_ratio, ratio);
  if (ratio > 1.0f) ++q.failing_rows;
}

// Worst of two cells, NaN winning (a NaN must stay visible).
float worst(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return std::max(a, b);
}

int32_t grid_columns(Stage s, const Tiling& t) {
  switch (s) {
    case Stage::fa1_step: return std::max(1, t.num_kv_tiles);
    case Stage::splitk_partial:
    case Stage::splitk_reduce: return std::max(1, t.num_splits);
    case Stage::final_output: return 1;
  }
  return 1;
}

int32_t grid_column(const EventKey& k) {
  switch (static_cast<Stage>(k.stage)) {
    case Stage::fa1_step: return k.step;
    case Stage::splitk_partial:
    case Stage::splitk_reduce: return k.split;
    case Stage::final_output: return 0;
  }
  return 0;
}

const char* column_axis(Stage s) {
  switch (s) {
    case Stage::fa1_step: return "kv tile";
    case Stage::splitk_partial:
    case Stage::splitk_reduce: return "split";
    case Stage::final_output: return "output";
  }
  return "column";
}

ErrorGrid new_grid(Stage s, int32_t batch, int32_t head, const AttentionConfig& c, const Tiling& t) {
  ErrorGrid g;
  g.stage = s;
  g.batch = batch;
  g.head = head;
  g.column_axis = column_axis(s);
  g.grid.rows = c.seq_q;
  g.grid.cols = grid_columns(s, t);
  const size_t cells = static_cast<size_t>(g.grid.rows) * static_cast<size_t>(g.grid.cols);
  g.grid.values.assign(cells, 0.0f);
  g.grid.mask.assign(cells, 1);  // uncovered until an event writes the cell
  return g;
}

// The worst of the intermediate stages of one pair, cell by cell (FA-1: its steps; Split-K: the
// partials and the reduce, both by split).
void build_overview(AnalysisReport& rep) {
  std::map<std::pair<int32_t, int32_t>, ErrorGrid> by_pair;
  for (const ErrorGrid& g : rep.grids) {
    if (g.stage == Stage::final_output) continue;
    auto [it, fresh] = by_pair.try_emplace({g.batch, g.head}, g);
    if (fresh) continue;
    ErrorGrid& o = it->second;
    if (o.grid.cols != g.grid.cols) continue;
    for (size_t c = 0; c < o.grid.values.size(); ++c) {
      if (g.grid.mask[c]) continue;
      o.grid.values[c] = o.grid.mask[c] ? g.grid.values[c] : worst(o.grid.values[c], g.grid.values[c]);
      o.grid.mask[c] = 0;
    }
  }
  for (auto& [pair, g] : by_pair) {
    g.column_axis = rep.tiling.kernel == KernelKind::fa1 ? "kv tile" : "split";
    rep.overview.push_back(std::move(g));
  }
}

}  // namespace

AnalysisReport analyze_run(const RunView& run, const AnalysisOptions& options) {
  RunReferenceOptions ro;
  ro.cache_bytes = options.reference_cache_bytes;
  ro.workers = options.workers;
  ro.tolerance = options.tolerance;
  RunReference reference(run, ro);
  return analyze_run(run, reference, options.workers);
}

AnalysisReport analyze_run(const RunView& run, RunReference& ref, unsigned workers) {
  AnalysisReport rep;
  rep.label = run.label;
  rep.config = ref.config();
  rep.tiling = ref.tiling();
  rep.metadata = run.metadata;
  rep.dropped_events = run.dropped_events;
  for (int s = 0; s < kNumStages; ++s) rep.stages[static_cast<size_t>(s)].stage = static_cast<Stage>(s);
  const Tiling& tiling = rep.tiling;
  const size_t n = run.num_events();
  const size_t bm = static_cast<size_t>(run.block_m);
  if (n == 0)
    throw AnalysisError("the run holds no events to compare (captured without tracing, or with filters that kept "
                        "nothing); capture it with tracing on");
  rep.events.resize(n);

  // Identities; events that do not belong to the run are set aside.
  std::vector<EventKey> keys(n);
  std::map<TileId, std::vector<size_t>> groups;
  std::map<EventKey, size_t> present;
  for (size_t i = 0; i < n; ++i) {
    const EventHeader& h = run.headers[i];
    const std::string problem = event_problem(h, rep.config, tiling);
    if (!problem.empty()) {
      rep.anomalies.push_back("event " + std::to_string(i) + " (" + stage_name(h.stage) + "): " + problem +
                              "; not compared");
      continue;
    }
    keys[i] = event_key(h);
    auto [it, fresh] = present.emplace(keys[i], i);
    if (!fresh)
      rep.anomalies.push_back("event " + std::to_string(i) + " repeats event " + std::to_string(it->second) + " (" +
                              describe_key(keys[i]) + ")");
    groups[{h.batch, h.head, h.q_tile}].push_back(i);
    rep.events[i].compared = true;
    rep.events[i].kv = expected_kv_range(keys[i], tiling);
  }

  // Row errors, a tile at a time: its reference, the naive baselines on it, its events.
  std::vector<RowError> row_errors(n * bm);
  const bool need_naive = !ref.has_tolerance();
  std::vector<std::pair<TileId, const std::vector<size_t>*>> tiles;
  for (const auto& [id, idx] : groups) tiles.emplace_back(id, &idx);
  std::vector<NaiveErrors> naive(tiles.size());
  parallel_for(static_cast<int64_t>(tiles.size()), workers, [&](int64_t t) {
    const auto& [id, idx] = tiles[static_cast<size_t>(t)];
    const std::shared_ptr<const TileReference> tile = ref.tile(id);
    if (need_naive) naive[static_cast<size_t>(t)] = ref.naive_errors(id, *tile);
    for (size_t i : *idx) {
      const RefState want = ref.expected(keys[i], *tile);
      const RunEvent ev = run.event(i);
      const TraceState got{static_cast<Convention>(ev.header.convention), ev.header.rows, run.head_dim, ev.m, ev.l,
                           ev.o};
      compare_state(got, want, std::span<RowError>(row_errors).subspan(i * bm, static_cast<size_t>(ev.header.rows)));
    }
  });
  if (need_naive) {
    NaiveErrors all;
    for (const NaiveErrors& e : naive) all = max_errors(all, e);
    ref.set_tolerance(rule_tolerance(all, rep.config.dtype));
  }
  rep.tolerance = ref.tolerance();

  // Verdicts, stage figures and grids.
  std::map<std::tuple<int32_t, int32_t, int32_t>, size_t> grid_of;
  std::array<std::set<int32_t>, kNumStages> conventions;
  for (size_t i = 0; i < n; ++i) {
    EventResult& res = rep.events[i];
    if (!res.compared) continue;
    const EventHeader& h = run.headers[i];
    const Stage stage = static_cast<Stage>(h.stage);
    StageReport& sr = rep.stages[static_cast<size_t>(h.stage)];
    const StageBars& bars = rep.tolerance.for_stage(stage);
    conventions[static_cast<size_t>(h.stage)].insert(h.convention);
    auto [git, fresh] = grid_of.try_emplace({h.stage, h.batch, h.head}, rep.grids.size());
    if (fresh) rep.grids.push_back(new_grid(stage, h.batch, h.head, rep.config, tiling));
    ErrorGrid& grid = rep.grids[git->second];
    const int64_t col = grid_column(keys[i]);
    ++sr.events_compared;
    for (int32_t r = 0; r < h.rows; ++r) {
      const RowError& e = row_errors[i * bm + static_cast<size_t>(r)];
      const RowVerdict v = judge_row(e, bars);
      ++sr.rows_compared;
      add_quantity(sr.m, e.m_err, e.m_ref, bars.m, e.l_ref);
      add_quantity(sr.l, e.l_err, e.l_ref, bars.l, e.l_ref);
      add_quantity(sr.o_norm, e.o_norm_err, e.o_norm_ref, bars.o_norm, e.l_ref);
      add_quantity(sr.o_raw, e.o_raw_err, e.o_raw_ref, bars.o_raw, e.l_ref);
      sr.non_finite.nan += e.nan;
      sr.non_finite.pos_inf += e.pos_inf;
      sr.non_finite.neg_inf += e.neg_inf;
      res.nan += e.nan;
      res.inf += static_cast<uint32_t>(e.pos_inf) + e.neg_inf;
      if (e.no_key) {
        ++res.no_key_rows;
        res.nan_in_no_key_rows += e.nan;
      }
      res.worst_ratio = std::max(res.worst_ratio, v.ratio);
      res.failed |= v.failed;
      if (!v.passes()) {
        ++sr.rows_failing;
        ++res.failing_rows;
        if (res.first_failing_row < 0) res.first_failing_row = r;
      }
      const int64_t query = static_cast<int64_t>(h.q_tile) * tiling.block_m + r;
      const size_t cell = static_cast<size_t>(query * grid.grid.cols + col);
      const float value = e.nan > 0 ? std::numeric_limits<float>::quiet_NaN() : v.ratio;
      grid.grid.values[cell] = grid.grid.mask[cell] ? value : worst(grid.grid.values[cell], value);
      grid.grid.mask[cell] = 0;
    }
    res.passes = res.failed == 0;
    if (!res.passes) {
      ++sr.events_failing;
      if (sr.first_failing_event < 0) sr.first_failing_event = static_cast<int64_t>(i);
    }
  }
  for (int s = 0; s < kNumStages; ++s) {
    const auto& c = conventions[static_cast<size_t>(s)];
    StageReport& sr = rep.stages[static_cast<size_t>(s)];
    if (c.size() == 1) sr.convention = *c.begin() == static_cast<int32_t>(Convention::normalized) ? "normalized" : "unnormalized";
    else if (c.size() > 1) sr.convention = "mixed";
  }
  build_overview(rep);

  // Missing events: every event a trace of these tiles and stages holds, that this one lacks.
  std::vector<TileId> tile_ids;
  uint32_t stage_mask = 0;
  for (const auto& [id, idx] : groups) tile_ids.push_back(id);
  for (const auto& [key, idx] : present) stage_mask |= stage_bit(static_cast<Stage>(key.stage));
  uint64_t not_captured = 0;
  for (const EventKey& key : expected_events(tiling, tile_ids, stage_mask)) {
    StageReport& sr = rep.stages[static_cast<size_t>(key.stage)];
    ++sr.events_expected;
    if (present.count(key)) continue;
    if (run.dropped_events > 0) {
      ++not_captured;  // the buffer was full: cannot tell a dropped event from an unwritten one
      continue;
    }
    ++sr.events_missing;
    rep.missing.push_back({key, expected_kv_range(key, tiling)});
  }
  if (not_captured > 0)
    rep.anomalies.push_back(std::to_string(not_captured) + " events of the traced tiles are not in the trace; the " +
                            "trace buffer was full (" + std::to_string(run.dropped_events) +
                            " events dropped): capture with a larger --capacity or narrower filters");
  for (StageReport& sr : rep.stages) sr.traced = sr.events_expected > 0 || sr.events_compared > 0;

  // The first divergence in the kernels' own order.
  std::optional<OrderKey> best;
  int64_t best_event = -1;
  const MissingEvent* best_missing = nullptr;
  int64_t first_failing = -1;
  std::optional<OrderKey> first_failing_key;
  for (size_t i = 0; i < n; ++i) {
    if (!rep.events[i].compared || rep.events[i].passes) continue;
    const OrderKey k = order_key(keys[i], tiling);
    if (!first_failing_key || k < *first_failing_key) {
      first_failing_key = k;
      first_failing = static_cast<int64_t>(i);
    }
  }
  best = first_failing_key;
  best_event = first_failing;
  for (const MissingEvent& m : rep.missing) {
    const OrderKey k = order_key(m.key, tiling);
    if (!best || k < *best) {
      best = k;
      best_missing = &m;
      best_event = -1;
    }
  }
  Divergence& d = rep.first_divergence;
  std::optional<EventComparison> first_cmp;
  if (first_failing >= 0) first_cmp = compare_event(run, ref, static_cast<size_t>(first_failing));
  d.first_failing_event = first_failing;
  if (best_missing) {
    d.found = true;
    d.missing = true;
    d.key = best_missing->key;
    d.kv = best_missing->kv;
    // Every row the event should have held went unchecked.
    const int64_t q0 = static_cast<int64_t>(d.key.q_tile) * tiling.block_m;
    for (int64_t r = 0; r < tiling.rows_in_q_tile(d.key.q_tile); ++r) d.query_rows.push_back(q0 + r);
  } else if (best_event >= 0) {
    d.found = true;
    d.event_index = best_event;
    d.key = keys[static_cast<size_t>(best_event)];
    d.kv = rep.events[static_cast<size_t>(best_event)].kv;
    d.failed = rep.events[static_cast<size_t>(best_event)].failed;
    d.nan = rep.events[static_cast<size_t>(best_event)].nan;
    d.worst_ratio = rep.events[static_cast<size_t>(best_event)].worst_ratio;
    const int64_t q0 = static_cast<int64_t>(d.key.q_tile) * tiling.block_m;
    for (int32_t r : first_cmp->failing_rows()) d.query_rows.push_back(q0 + r);
    d.columns = first_cmp->failing_columns();
  }
  rep.verdict = d.found ? Verdict::divergence : Verdict::clean;
  rep.symptom = diagnose(rep, run, ref);
  return rep;
}

}  // namespace ts
