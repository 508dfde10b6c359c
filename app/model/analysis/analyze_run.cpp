// The analysis of one run in phases, each a function below: identify (which events can be
// compared, their row blocks), compare (every event's rows against the reference), judge (the
// verdicts under the tolerance, stage figures, grids), missing (planned events never written),
// first divergence (in the kernel's own order), measure (where it is wrong as sets, the worst
// cell: failing_sets.h, worst_cell.h), diagnose (symptoms.h).
#include "app/model/analysis/analyze_run.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "app/model/analysis/absent_cells.h"
#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/naive_baseline.h"
#include "app/model/analysis/parallel_for.h"
#include "app/model/analysis/symptoms.h"
#include "app/model/analysis/worst_cell.h"
#include "instrumentation/trace/trace_file.h"

namespace ts {
namespace {

constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();

void add_quantity(QuantityStats& q, float err, float ref, const QuantityBar& bar, float l_ref) {
  const float ratio = bar_ratio(err, bar.bar(ref, l_ref));
  q.max_abs = std::max<double>(q.max_abs, err);
  const double rel = err == 0.0f ? 0.0 : (ref > 0.0f ? static_cast<double>(err) / ref : INFINITY);
  q.max_rel = std::max(q.max_rel, rel);
  q.max_ratio = std::max<double>(q.max_ratio, ratio);
  if (ratio > 1.0f) ++q.failing_rows;
}

// Worst of two cells, NaN winning (a NaN must stay visible).
float worst(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return kNaNF;
  return std::max(a, b);
}

// Phase 1: which events can be compared, which repeat another, and the row blocks they form.
struct Identities {
  std::vector<std::vector<size_t>> by_block;  // event indices per row block, blocks in order
  std::vector<RowBlock> blocks;
};
// Notes of one kind beyond this many are summarised in one line (a trace may repeat an event
// thousands of times).
constexpr size_t kNotesOfAKind = 3;

Identities identify(const RunView& run, AnalysisReport& rep) {
  Identities ids;
  std::map<EventKey, size_t> present;
  std::map<RowBlock, size_t> block_index;
  size_t not_compared = 0, repeats = 0;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    // A run read from a file was checked by the reader; one made in memory (a capture, a
    // recorder, a test) is checked here, with the same rule.
    std::string problem = event_header_problem(h, run.num_stages(), run.attention, run.max_rows);
    if (problem.empty()) problem = event_problem(h, run.attention);
    if (problem.empty() && h.rows <= 0) problem = "it holds no rows";
    if (!problem.empty()) {
      if (not_compared++ < kNotesOfAKind)
        rep.anomalies.push_back("event " + std::to_string(i) + " (" + describe_event(h, run.stages, run.attention) +
                                "): " + problem + "; not compared");
      continue;
    }
    auto [it, fresh] = present.emplace(event_key(h), i);
    if (!fresh && repeats++ < kNotesOfAKind)
      rep.anomalies.push_back("event " + std::to_string(i) + " repeats event " + std::to_string(it->second) + " (" +
                              describe_event(h, run.stages, run.attention) + ")");
    const RowBlock rb = row_block(h);
    auto [bit, new_block] = block_index.emplace(rb, ids.blocks.size());
    if (new_block) {
      ids.blocks.push_back(rb);
      ids.by_block.emplace_back();
    }
    ids.by_block[bit->second].push_back(i);
    rep.events[i].compared = true;
  }
  if (not_compared > kNotesOfAKind)
    rep.anomalies.push_back("... and " + std::to_string(not_compared - kNotesOfAKind) +
                            " more events that cannot be compared (" + std::to_string(not_compared) + " in all)");
  if (repeats > kNotesOfAKind)
    rep.anomalies.push_back("... and " + std::to_string(repeats - kNotesOfAKind) + " more events that repeat an earlier one (" +
                            std::to_string(repeats) + " in all)");
  return ids;
}

// Phase 2: every compared event's rows against the reference of its row block, row blocks in
// parallel, with the naive baselines' errors when the tolerance is not known yet.
// Row blocks the GPU computes at a time: their references (pieces and prefixes) within this
// many bytes, so that a run of large row blocks does not hold them all at once, and so that the
// CPU compares one batch while the GPU computes the next.
constexpr size_t kGpuBatchBytes = size_t{64} << 20;

std::vector<RowError> compare_events(const RunView& run, RunReference& ref, const Identities& ids, unsigned workers,
                                     const AnalysisProgress& progress) {
  const size_t rows_cap = static_cast<size_t>(run.max_rows);
  std::vector<RowError> row_errors(run.num_events() * rows_cap);
  const bool need_naive = !ref.has_tolerance();
  std::vector<NaiveErrors> naive(ids.blocks.size());
  const double scale = run.attention.effective_scale();
  const uint64_t total = ids.blocks.size();
  std::atomic<uint64_t> done{0};
  // One row block: the baselines' errors when the tolerance is not known yet, then every event.
  const auto compare_block = [&](size_t b, const RowBlockReference* block) {
    if (need_naive) naive[b] = ref.naive_errors(*block);
    for (size_t i : ids.by_block[b]) {
      const RefState want = ref.expected(run.headers[i], *block);
      const RunEvent ev = run.event(i);
      const TraceState got{ev.header.convention, scale, ev.header.rows, run.head_dim, ev.m, ev.l, ev.o};
      compare_state(got, want,
                    std::span<RowError>(row_errors).subspan(i * rows_cap, static_cast<size_t>(ev.header.rows)));
    }
    if (progress) progress(done.fetch_add(1) + 1, total);
  };
  if (ref.on_gpu()) {
    // Batches of row blocks computed together on the device (the next one while the CPU's
    // threads compare this one).
    std::vector<std::pair<size_t, size_t>> batches;
    for (size_t first = 0; first < ids.blocks.size();) {
      size_t last = first, bytes = 0;
      while (last < ids.blocks.size() && (last == first || bytes + ref.block_bytes(ids.blocks[last]) <= kGpuBatchBytes))
        bytes += ref.block_bytes(ids.blocks[last++]);
      batches.emplace_back(first, last);
      first = last;
    }
    const auto compute = [&](size_t k) {
      return ref.blocks(std::span(ids.blocks).subspan(batches[k].first, batches[k].second - batches[k].first));
    };
    std::future<std::vector<std::shared_ptr<const RowBlockReference>>> next;
    if (!batches.empty()) next = std::async(std::launch::async, compute, 0);
    for (size_t k = 0; k < batches.size(); ++k) {
      const auto refs = next.get();
      if (k + 1 < batches.size()) next = std::async(std::launch::async, compute, k + 1);
      const size_t first = batches[k].first;
      parallel_for(static_cast<int64_t>(refs.size()), workers,
                   [&](int64_t j) { compare_block(first + static_cast<size_t>(j), refs[static_cast<size_t>(j)].get()); });
    }
  } else {
    parallel_for(static_cast<int64_t>(ids.blocks.size()), workers, [&](int64_t b) {
      const std::shared_ptr<const RowBlockReference> block = ref.block(ids.blocks[static_cast<size_t>(b)]);
      compare_block(static_cast<size_t>(b), block.get());
    });
  }
  if (need_naive) {
    NaiveErrors all;
    for (const NaiveErrors& e : naive) all = max_errors(all, e);
    ref.set_tolerance(rule_tolerance(all, run.attention.dtype));
  }
  return row_errors;
}

// Phase 3's grid layout: per stage the sorted key ends its events reach (its columns), the
// overview's as the union over the non-final stages, and the row pooling that keeps the whole
// report within kMaxReportGridCells.
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

// Phase 3: verdicts under the tolerance, each stage's figures, the grids.
void judge(const RunView& run, const std::vector<RowError>& row_errors, AnalysisReport& rep) {
  const size_t rows_cap = static_cast<size_t>(run.max_rows);
  const GridLayout layout = lay_out_grids(run, rep);
  std::map<std::tuple<int32_t, int32_t, int32_t>, size_t> grid_of;
  std::vector<std::set<int32_t>> conventions(run.num_stages());
  for (size_t i = 0; i < run.num_events(); ++i) {
    EventResult& res = rep.events[i];
    if (!res.compared) continue;
    const EventHeader& h = run.headers[i];
    const StageInfo& stage = run.stage_of(i);
    StageReport& sr = rep.stages[static_cast<size_t>(h.stage)];
    const StageBars& bars = rep.tolerance.for_stage(stage);
    conventions[static_cast<size_t>(h.stage)].insert(h.convention);
    auto [git, fresh] = grid_of.try_emplace({h.stage, h.batch, h.head}, rep.grids.size());
    if (fresh)
      rep.grids.push_back(new_grid(h.stage, h.batch, h.head, layout.stage_columns[static_cast<size_t>(h.stage)],
                                   run.attention.seq_q, layout.rows_per_cell));
    ErrorGrid& grid = rep.grids[git->second];
    const int64_t col = grid.column_of(event_key_end(h, stage, run.attention));
    ++sr.events_compared;
    for (int32_t r = 0; r < h.rows; ++r) {
      const RowError& e = row_errors[i * rows_cap + static_cast<size_t>(r)];
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
      put(grid, int64_t{h.q_begin} + r, col, e.nan > 0 ? kNaNF : v.ratio);
    }
    res.passes = res.failed == 0;
    if (!res.passes) {
      ++sr.events_failing;
      if (sr.first_failing_event < 0) sr.first_failing_event = static_cast<int64_t>(i);
    }
  }
  for (size_t s = 0; s < run.num_stages(); ++s) {
    const auto& c = conventions[s];
    if (c.size() == 1) rep.stages[s].convention = convention_name(*c.begin());
    else if (c.size() > 1) rep.stages[s].convention = "mixed";
  }
  build_overview(rep, layout);
}

// Phase 4: the planned events the kernel never wrote, in the kernel's own order.
void collect_missing(const RunView& run, AnalysisReport& rep) {
  std::vector<EventHeader> missing = run.missing;
  const auto order = kernel_order(missing, run.stages);
  for (size_t i : order) {
    const EventHeader& m = missing[i];
    if (m.stage < 0 || static_cast<size_t>(m.stage) >= run.num_stages()) continue;
    ++rep.stages[static_cast<size_t>(m.stage)].events_missing;
    rep.missing.push_back(m);
  }
  if (run.dropped_events > 0)
    rep.anomalies.push_back(std::to_string(run.dropped_events) +
                            " events were dropped because the trace buffer was full; they were not checked: capture "
                            "with a larger --capacity or narrower filters");
  for (StageReport& sr : rep.stages) {
    sr.events_expected = sr.events_compared + sr.events_missing;
    sr.traced = sr.events_expected > 0;
  }
}

// Phase 5: the first divergence in the kernel's own order (a missing event counts).
void find_first_divergence(const RunView& run, const RunReference& ref, AnalysisReport& rep) {
  std::optional<OrderKey> best, first_failing_key;
  int64_t best_event = -1, first_failing = -1, best_missing = -1;
  for (size_t i = 0; i < run.num_events(); ++i) {
    if (!rep.events[i].compared || rep.events[i].passes) continue;
    const OrderKey k = order_key(run.headers[i], run.stages);
    if (!first_failing_key || k < *first_failing_key) {
      first_failing_key = k;
      first_failing = static_cast<int64_t>(i);
    }
  }
  best = first_failing_key;
  best_event = first_failing;
  for (size_t m = 0; m < rep.missing.size(); ++m) {
    const OrderKey k = order_key(rep.missing[m], run.stages);
    if (!best || k < *best) {
      best = k;
      best_missing = static_cast<int64_t>(m);
      best_event = -1;
    }
  }
  Divergence& d = rep.first_divergence;
  d.first_failing_event = first_failing;
  if (best_missing >= 0) {
    d.found = true;
    d.missing = true;
    d.missing_index = best_missing;
    d.header = rep.missing[static_cast<size_t>(best_missing)];
    // Every row the event should have held went unchecked.
    for (int32_t r = 0; r < d.header.rows; ++r) d.query_rows.push_back(int64_t{d.header.q_begin} + r);
  } else if (best_event >= 0) {
    const EventResult& e = rep.events[static_cast<size_t>(best_event)];
    const EventComparison cmp = compare_event(run, ref, static_cast<size_t>(best_event));
    d.found = true;
    d.event_index = best_event;
    d.header = run.headers[static_cast<size_t>(best_event)];
    d.failed = e.failed;
    d.nan = e.nan;
    d.worst_ratio = e.worst_ratio;
    for (int32_t r : cmp.failing_rows()) d.query_rows.push_back(int64_t{d.header.q_begin} + r);
    d.columns = cmp.failing_columns();
  }
}

}  // namespace

AnalysisReport analyze_run(const RunView& run, const AnalysisOptions& options) {
  RunReferenceOptions ro;
  ro.cache_bytes = options.reference_cache_bytes;
  ro.workers = options.workers;
  ro.tolerance = options.tolerance;
  ro.device = options.device;
  RunReference reference(run, ro);
  return analyze_run(run, reference, options.workers, options.progress);
}

AnalysisReport analyze_run(const RunView& run, RunReference& ref, unsigned workers, const AnalysisProgress& progress) {
  AnalysisReport rep;
  rep.label = run.label;
  rep.attention = run.attention;
  rep.stage_table = run.stages;
  rep.config = run.config;
  rep.tiling = run.tiling;
  rep.metadata = run.metadata;
  rep.dropped_events = run.dropped_events;
  for (size_t s = 0; s < run.num_stages(); ++s) {
    StageReport sr;
    sr.stage = static_cast<int32_t>(s);
    sr.info = run.stages[s];
    rep.stages.push_back(sr);
  }
  if (run.num_events() == 0 && run.missing.empty())
    throw AnalysisError("the run holds no events to compare (captured without tracing, or with filters that kept "
                        "nothing, and without its output); capture it with tracing on");
  rep.events.resize(run.num_events());

  const Identities ids = identify(run, rep);
  const std::vector<RowError> row_errors = compare_events(run, ref, ids, workers, progress);
  rep.tolerance = ref.tolerance();
  judge(run, row_errors, rep);
  collect_missing(run, rep);
  mark_absent_cells(rep);  // why each empty grid cell is empty: masked, never written, not traced
  find_first_divergence(run, ref, rep);
  rep.verdict = rep.first_divergence.found ? Verdict::divergence : Verdict::clean;
  measure_failing_sets(run, ref, row_errors, rep);
  find_worst_cells(run, ref, rep);
  rep.symptom = diagnose(rep, run, ref, workers);
  return rep;
}

}  // namespace ts
