// The analysis's phases (app/model/analysis/analysis_phases.h) each on its own, on CPU captures
// of seeded random inputs: each phase's output is checked against what it must mean, worked out
// here another way (per-event comparisons of event_comparison.h, brute-force searches over the
// events, the run's own headers), and the phases in order against analyze_run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "app/model/analysis/absent_cells.h"
#include "app/model/analysis/analysis_error.h"
#include "app/model/analysis/analysis_phases.h"
#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/report_json.h"
#include "app/model/analysis/report_text.h"
#include "app/model/analysis/symptoms.h"
#include "app/model/analysis/worst_cell.h"
#include "base/kernel_list.h"
#include "kernels/kernel_stages.h"
#include "kernels/tile_shapes.h"
#include "tests/analysis/launched_run.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::make_config;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

RunReferenceOptions on_cpu() {
  RunReferenceOptions o;
  o.device = ReferenceDevice::cpu;
  return o;
}

RunView launch(const AttentionConfig& config, uint64_t seed) {
  test::LaunchSpec spec;
  spec.config = config;
  spec.seed = seed;
  return test::launch_run(spec);
}

// A run whose payloads and headers the test may change: copies that the view points into.
struct EditableRun {
  std::shared_ptr<std::vector<float>> m, l, o;
  RunView view;
};
EditableRun editable(const RunView& run) {
  EditableRun e;
  e.m = std::make_shared<std::vector<float>>(run.m.begin(), run.m.end());
  e.l = std::make_shared<std::vector<float>>(run.l.begin(), run.l.end());
  e.o = std::make_shared<std::vector<float>>(run.o.begin(), run.o.end());
  e.view = run;
  e.view.m = *e.m;
  e.view.l = *e.l;
  e.view.o = *e.o;
  return e;
}

// The phases up to and including verdicts, as analyze_run runs them.
struct Judged {
  AnalysisReport report;
  ComparedEvents events;
  std::vector<RowError> row_errors;
};
Judged judge(const RunView& run, RunReference& ref) {
  Judged j;
  j.report = start_report(run);
  j.events = identify_events(run, j.report);
  j.row_errors = compare_events(run, ref, j.events, 2);
  j.report.tolerance = ref.tolerance();
  judge_events(run, j.row_errors, j.report);
  return j;
}

// A Split-K run of random size whose reduce weights each split by l twice: partial states right,
// merged states and the output wrong.
AttentionConfig double_count_config(std::mt19937_64& rng) {
  const int64_t seq_q = std::uniform_int_distribution<int64_t>(9, 40)(rng);
  const int64_t seq_kv = std::uniform_int_distribution<int64_t>(200, 600)(rng);
  return make_config(KernelKind::splitk, Fault::double_count_l, DType::f32, 64, seq_q, seq_kv, false, 3, 1, 2);
}

TEST(AnalysisPhases, StartReportFramesTheRunAndRefusesAnEmptyOne) {
  TS_SEEDED(seed);
  const RunView run = launch(make_config(KernelKind::fa1, Fault::none, DType::f32, 32, 20, 90, true), seed);
  const AnalysisReport rep = start_report(run);
  ASSERT_EQ(rep.stages.size(), run.num_stages());
  for (size_t s = 0; s < run.num_stages(); ++s) {
    EXPECT_EQ(rep.stages[s].stage, static_cast<int32_t>(s));
    EXPECT_EQ(rep.stages[s].info.name, run.stages[s].name);
    EXPECT_EQ(rep.stages[s].events_compared, 0u);
  }
  EXPECT_EQ(rep.events.size(), run.num_events());
  for (const EventResult& e : rep.events) EXPECT_FALSE(e.compared);

  RunView empty = run;
  empty.headers.clear();
  empty.recorded_events = 0;
  empty.missing.clear();
  EXPECT_THROW(start_report(empty), AnalysisError);
}

TEST(AnalysisPhases, IdentifyEventsGroupsRowBlocksAndNotesWhatCannotBeCompared) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const RunView run = launch(double_count_config(rng), seed);
  ASSERT_GE(run.recorded_events, 3u);

  AnalysisReport rep = start_report(run);
  const ComparedEvents ids = identify_events(run, rep);
  EXPECT_TRUE(rep.anomalies.empty()) << rep.anomalies[0];
  // Every event is in exactly one block, the block of its rows; blocks are distinct and ordered
  // by their first event.
  ASSERT_EQ(ids.blocks.size(), ids.by_block.size());
  std::set<RowBlock> distinct(ids.blocks.begin(), ids.blocks.end());
  EXPECT_EQ(distinct.size(), ids.blocks.size());
  std::vector<int> seen(run.num_events(), 0);
  size_t previous_first = 0;
  for (size_t b = 0; b < ids.blocks.size(); ++b) {
    ASSERT_FALSE(ids.by_block[b].empty());
    EXPECT_TRUE(b == 0 || ids.by_block[b].front() > previous_first);
    previous_first = ids.by_block[b].front();
    EXPECT_TRUE(std::is_sorted(ids.by_block[b].begin(), ids.by_block[b].end()));
    for (size_t i : ids.by_block[b]) {
      ++seen[i];
      EXPECT_EQ(row_block(run.headers[i]), ids.blocks[b]) << "event " << i;
    }
  }
  for (size_t i = 0; i < run.num_events(); ++i) {
    EXPECT_EQ(seen[i], 1) << "event " << i;
    EXPECT_TRUE(rep.events[i].compared) << "event " << i;
  }

  // An event that names a head the run does not have, one with no rows, one that repeats
  // another's identity: the first two are left out, the third compared, each noted.
  RunView odd = run;
  odd.headers[0].head = static_cast<int32_t>(run.attention.heads_q);
  odd.headers[1].rows = 0;
  odd.headers[2] = run.headers[run.recorded_events - 1];
  AnalysisReport odd_rep = start_report(odd);
  const ComparedEvents odd_ids = identify_events(odd, odd_rep);
  EXPECT_FALSE(odd_rep.events[0].compared);
  EXPECT_FALSE(odd_rep.events[1].compared);
  EXPECT_TRUE(odd_rep.events[2].compared);
  ASSERT_EQ(odd_rep.anomalies.size(), 3u);
  EXPECT_NE(odd_rep.anomalies[0].find("event 0 ("), std::string::npos) << odd_rep.anomalies[0];
  EXPECT_NE(odd_rep.anomalies[1].find("event 1 ("), std::string::npos) << odd_rep.anomalies[1];
  EXPECT_NE(odd_rep.anomalies[2].find("event " + std::to_string(run.recorded_events - 1) + " repeats event 2"),
            std::string::npos)
      << odd_rep.anomalies[2];
  size_t grouped = 0;
  for (const auto& block : odd_ids.by_block) {
    grouped += block.size();
    for (size_t i : block) EXPECT_GT(i, 1u);
  }
  EXPECT_EQ(grouped, run.num_events() - 2);

  // Beyond kNotesOfAKind of a kind, one line says how many.
  RunView many = run;
  for (size_t i = 0; i < run.recorded_events; ++i) many.headers[i].rows = 0;
  AnalysisReport many_rep = start_report(many);
  identify_events(many, many_rep);
  if (run.recorded_events > kNotesOfAKind) {
    ASSERT_EQ(many_rep.anomalies.size(), kNotesOfAKind + 1);
    EXPECT_NE(many_rep.anomalies.back().find(std::to_string(run.recorded_events) + " in all"), std::string::npos)
        << many_rep.anomalies.back();
  }
}

TEST(AnalysisPhases, CompareEventsMeasuresEveryRowAsTheOneEventComparisonDoes) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const RunView run = launch(double_count_config(rng), seed);
  RunReference ref(run, on_cpu());
  AnalysisReport rep = start_report(run);
  const ComparedEvents ids = identify_events(run, rep);

  ASSERT_FALSE(ref.has_tolerance());
  uint64_t last_done = 0, last_total = 0, calls = 0;
  std::mutex mu;
  const std::vector<RowError> errors = compare_events(run, ref, ids, 2, [&](uint64_t done, uint64_t total) {
    std::lock_guard lock(mu);
    ++calls;
    last_done = std::max(last_done, done);
    last_total = total;
  });
  // The tolerance is the rule's, set from the baselines measured on the way.
  EXPECT_TRUE(ref.has_tolerance());
  EXPECT_GT(ref.tolerance().intermediate.o_norm.atol + ref.tolerance().intermediate.o_norm.rtol, 0.0);
  EXPECT_EQ(calls, ids.blocks.size());
  EXPECT_EQ(last_done, ids.blocks.size());
  EXPECT_EQ(last_total, ids.blocks.size());

  const size_t cap = static_cast<size_t>(run.max_rows);
  ASSERT_EQ(errors.size(), run.num_events() * cap);
  bool some_error = false;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventComparison cmp = compare_event(run, ref, i);
    const int32_t rows = run.headers[i].rows;
    ASSERT_EQ(cmp.row_errors.size(), static_cast<size_t>(rows));
    for (int32_t r = 0; r < rows; ++r) {
      const RowError& got = errors[i * cap + static_cast<size_t>(r)];
      const RowError& want = cmp.row_errors[static_cast<size_t>(r)];
      EXPECT_EQ(got.m_err, want.m_err) << "event " << i << " row " << r;
      EXPECT_EQ(got.l_err, want.l_err);
      EXPECT_EQ(got.o_norm_err, want.o_norm_err);
      EXPECT_EQ(got.o_raw_err, want.o_raw_err);
      EXPECT_EQ(got.o_norm_ref, want.o_norm_ref);
      EXPECT_EQ(got.nan, want.nan);
      some_error |= got.o_norm_err > 0;
    }
    // Rows past the event's own are not compared.
    for (size_t r = static_cast<size_t>(rows); r < cap; ++r) {
      EXPECT_EQ(errors[i * cap + r].o_norm_ref, 0.0f);
      EXPECT_EQ(errors[i * cap + r].l_ref, 0.0f);
    }
  }
  EXPECT_TRUE(some_error);

  // A known tolerance is kept (no baselines measured).
  RunReferenceOptions fixed = on_cpu();
  fixed.tolerance = ToleranceOverride{1e-3, 1e-3};
  RunReference ref_fixed(run, fixed);
  ASSERT_TRUE(ref_fixed.has_tolerance());
  const Tolerance before = ref_fixed.tolerance();
  const std::vector<RowError> again = compare_events(run, ref_fixed, ids, 1);
  EXPECT_EQ(ref_fixed.tolerance().intermediate.o_norm.atol, before.intermediate.o_norm.atol);
  for (size_t k = 0; k < errors.size(); ++k) ASSERT_EQ(again[k].o_norm_err, errors[k].o_norm_err) << k;
}

// The walk over row blocks that the comparison and the local replay share: every block once,
// those already cached first, each with its own reference, and an error in the visitor reaches
// the caller.
TEST(AnalysisPhases, ForEachBlockVisitsEveryBlockOnceCachedOnesFirst) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const RunView run = launch(double_count_config(rng), seed);
  RunReferenceOptions small = on_cpu();
  small.cache_bytes = 1;  // nothing is kept: every visit computes its block
  RunReference uncached(run, small), ref(run, on_cpu());
  const std::vector<RowBlock>& blocks = ref.row_blocks();
  ASSERT_GE(blocks.size(), 4u);
  // A random few are cached before the walk.
  std::set<size_t> warm;
  for (size_t i = 0; i < blocks.size(); ++i)
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) warm.insert(i);
  for (size_t i : warm) ref.block(blocks[i]);
  std::mutex mu;
  std::vector<size_t> order;
  std::vector<int> visits(blocks.size(), 0);
  ref.for_each_block(blocks, 2, [&](size_t i, const RowBlockReference& block) {
    ASSERT_LT(i, blocks.size());
    EXPECT_TRUE(block.block() == blocks[i]) << i;
    const RefState got = block.output(), want = uncached.block(blocks[i])->output();
    EXPECT_EQ(got.o, want.o) << i;
    EXPECT_EQ(got.m, want.m) << i;
    std::lock_guard lock(mu);
    order.push_back(i);
    ++visits[i];
  });
  for (size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(visits[i], 1) << "block " << i;
  ASSERT_EQ(order.size(), blocks.size());
  for (size_t k = 0; k < warm.size(); ++k) EXPECT_TRUE(warm.count(order[k])) << "visit " << k << " was not a cached block";

  // Through a cache that keeps nothing, too; and the visitor's exception comes out.
  std::vector<int> again(blocks.size(), 0);
  uncached.for_each_block(blocks, 2, [&](size_t i, const RowBlockReference&) {
    std::lock_guard lock(mu);
    ++again[i];
  });
  EXPECT_EQ(again, std::vector<int>(blocks.size(), 1));
  EXPECT_THROW(uncached.for_each_block(blocks, 2,
                                       [&](size_t i, const RowBlockReference&) {
                                         if (i == blocks.size() / 2) throw AnalysisError("visitor failed");
                                       }),
               AnalysisError);
}

TEST(AnalysisPhases, JudgeEventsGivesEachEventTheVerdictOfItsCells) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  EditableRun e = editable(launch(double_count_config(rng), seed));
  const RunView& run = e.view;
  // A NaN written into one partial state: its event must fail with the NaN counted.
  const int32_t partial = test::stage_of(run, "splitk.partial");
  size_t poisoned = run.num_events();
  for (size_t i = 0; i < run.recorded_events && poisoned == run.num_events(); ++i)
    if (run.headers[i].stage == partial) poisoned = i;
  ASSERT_LT(poisoned, run.num_events());
  (*e.o)[poisoned * static_cast<size_t>(run.max_rows) * static_cast<size_t>(run.head_dim) + 1] = kNaN;

  RunReference ref(run, on_cpu());
  const Judged j = judge(run, ref);
  const AnalysisReport& rep = j.report;
  std::map<int32_t, uint64_t> compared, failing, rows;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventResult& res = rep.events[i];
    const EventComparison cmp = compare_event(run, ref, i);
    EXPECT_EQ(res.passes, cmp.passes) << "event " << i;
    EXPECT_EQ(res.worst_ratio, cmp.worst_ratio) << "event " << i;
    EXPECT_EQ(res.failing_rows, static_cast<int32_t>(cmp.failing_rows().size())) << "event " << i;
    EXPECT_EQ(res.first_failing_row, cmp.failing_rows().empty() ? -1 : cmp.failing_rows().front()) << "event " << i;
    ++compared[run.headers[i].stage];
    failing[run.headers[i].stage] += res.passes ? 0 : 1;
    rows[run.headers[i].stage] += static_cast<uint64_t>(run.headers[i].rows);
  }
  EXPECT_FALSE(rep.events[poisoned].passes);
  EXPECT_EQ(rep.events[poisoned].nan, 1u);
  EXPECT_EQ(rep.stages[static_cast<size_t>(partial)].non_finite.nan, 1u);
  for (const StageReport& s : rep.stages) {
    EXPECT_EQ(s.events_compared, compared[s.stage]) << s.info.name;
    EXPECT_EQ(s.events_failing, failing[s.stage]) << s.info.name;
    EXPECT_EQ(s.rows_compared, rows[s.stage]) << s.info.name;
    if (s.events_compared > 0) {
      EXPECT_FALSE(s.convention.empty()) << s.info.name;
    }
  }
  // The partial states are right but for the NaN; the merge and the output are wrong.
  EXPECT_EQ(rep.stages[static_cast<size_t>(partial)].events_failing, 1u);
  const StageReport& reduce = rep.stages[static_cast<size_t>(test::stage_of(run, "splitk.reduce"))];
  EXPECT_GT(reduce.events_failing, 0u);
  EXPECT_GT(reduce.o_norm.max_ratio, 1.0);
  EXPECT_GE(reduce.first_failing_event, 0);
  EXPECT_FALSE(rep.events[static_cast<size_t>(reduce.first_failing_event)].passes);
}

TEST(AnalysisPhases, ErrorGridsHoldEachRowsRatioNaNAndMaskWhereNothingWrote) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  EditableRun e = editable(launch(double_count_config(rng), seed));
  const RunView& run = e.view;
  const size_t poisoned = 0;
  (*e.m)[poisoned * static_cast<size_t>(run.max_rows)] = kNaN;  // row 0 of event 0

  RunReference ref(run, on_cpu());
  Judged j = judge(run, ref);
  build_error_grids(run, j.row_errors, j.report);
  const AnalysisReport& rep = j.report;

  // Every written cell, from the events' own comparisons: the worst of the events that cover
  // it (two events share a cell where a split adds no key: the same key end), NaN winning; the
  // rest stays masked.
  std::map<const ErrorGrid*, std::vector<uint8_t>> written;
  std::map<const ErrorGrid*, std::vector<float>> want;
  for (const ErrorGrid& g : rep.grids) {
    written[&g].assign(g.grid.values.size(), 0);
    want[&g].assign(g.grid.values.size(), 0.0f);
  }
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    const ErrorGrid* g = rep.grid(h.stage, h.batch, h.head);
    ASSERT_NE(g, nullptr) << "event " << i;
    EXPECT_EQ(g->rows_per_cell, 1);
    const int64_t col = g->column_of(event_key_end(h, run.stage_of(i), run.attention));
    ASSERT_GE(col, 0);
    const EventComparison cmp = compare_event(run, ref, i);
    for (int32_t r = 0; r < h.rows; ++r) {
      const size_t cell = static_cast<size_t>((h.q_begin + r) * g->grid.cols + col);
      const float v = cmp.row_errors[static_cast<size_t>(r)].nan > 0 ? kNaN : cmp.row_verdicts[static_cast<size_t>(r)].ratio;
      float& w = want[g][cell];
      w = !written[g][cell] ? v : (std::isnan(w) || std::isnan(v) ? kNaN : std::max(w, v));
      written[g][cell] = 1;
    }
  }
  for (const ErrorGrid& g : rep.grids)
    for (size_t c = 0; c < g.grid.values.size(); ++c) {
      if (!written[&g][c]) continue;
      EXPECT_EQ(g.grid.mask[c], 0) << "stage " << g.stage << " cell " << c;
      if (std::isnan(want[&g][c])) {
        EXPECT_TRUE(std::isnan(g.grid.values[c])) << "stage " << g.stage << " cell " << c;
      } else {
        EXPECT_EQ(g.grid.values[c], want[&g][c]) << "stage " << g.stage << " cell " << c;
      }
    }
  {
    const EventHeader& h = run.headers[poisoned];
    const ErrorGrid* g = rep.grid(h.stage, h.batch, h.head);
    const int64_t col = g->column_of(event_key_end(h, run.stage_of(poisoned), run.attention));
    EXPECT_TRUE(std::isnan(g->grid.values[static_cast<size_t>(h.q_begin * g->grid.cols + col)]))
        << "the poisoned row's cell holds NaN";
  }
  for (const ErrorGrid& g : rep.grids)
    for (size_t c = 0; c < g.grid.values.size(); ++c)
      if (!written[&g][c]) {
        EXPECT_NE(g.grid.mask[c], 0) << "stage " << g.stage << " cell " << c;
      }

  // The overview: per pair, the worst of the non-final stages on the same key position, NaN
  // winning.
  ASSERT_EQ(rep.overview.size(), static_cast<size_t>(run.attention.heads_q));
  bool overview_nan = false;
  for (const ErrorGrid& o : rep.overview) {
    EXPECT_EQ(o.stage, -1);
    for (int64_t oc = 0; oc < o.grid.cols; ++oc)
      for (int64_t r = 0; r < o.grid.rows; ++r) {
        float want = 0;
        bool any = false, nan = false;
        for (const ErrorGrid& g : rep.grids) {
          if (g.batch != o.batch || g.head != o.head || rep.stages[static_cast<size_t>(g.stage)].info.kind == StageKind::final)
            continue;
          const int64_t c = g.column_of(o.column_keys[static_cast<size_t>(oc)]);
          if (c < 0) continue;
          const size_t cell = static_cast<size_t>(r * g.grid.cols + c);
          if (g.grid.mask[cell]) continue;
          any = true;
          nan |= std::isnan(g.grid.values[cell]);
          want = std::max(want, g.grid.values[cell]);
        }
        const size_t cell = static_cast<size_t>(r * o.grid.cols + oc);
        EXPECT_EQ(o.grid.mask[cell] == 0, any);
        if (!any) continue;
        if (nan) {
          overview_nan = true;
          EXPECT_TRUE(std::isnan(o.grid.values[cell]));
        } else {
          EXPECT_EQ(o.grid.values[cell], want);
        }
      }
  }
  EXPECT_TRUE(overview_nan) << "event 0's NaN shows in its pair's overview";
}

TEST(AnalysisPhases, MissingEventsAreCountedInTheKernelsOrder) {
  TS_SEEDED(seed);
  // An empty split: its planned partial state is never written.
  RunView run = launch(make_config(KernelKind::splitk, Fault::empty_split, DType::f32, 64, 16, 100, false, 4), seed);
  ASSERT_FALSE(run.missing.empty());
  // Shuffled, with one that names no stage of the run (left out) and dropped events.
  std::mt19937_64 rng(seed);
  std::vector<EventHeader> planned = run.missing;
  std::shuffle(run.missing.begin(), run.missing.end(), rng);
  EventHeader stray = planned[0];
  stray.stage = static_cast<int32_t>(run.num_stages());
  run.missing.push_back(stray);
  run.dropped_events = 7;

  RunReference ref(run, on_cpu());
  Judged j = judge(run, ref);
  collect_missing_events(run, j.report);
  const AnalysisReport& rep = j.report;
  ASSERT_EQ(rep.missing.size(), planned.size());
  for (size_t k = 1; k < rep.missing.size(); ++k)
    EXPECT_LT(order_key(rep.missing[k - 1], run.stages), order_key(rep.missing[k], run.stages));
  std::map<int32_t, uint64_t> per_stage;
  for (const EventHeader& m : planned) ++per_stage[m.stage];
  for (const StageReport& s : rep.stages) {
    EXPECT_EQ(s.events_missing, per_stage[s.stage]) << s.info.name;
    EXPECT_EQ(s.events_expected, s.events_compared + s.events_missing) << s.info.name;
    EXPECT_EQ(s.traced, s.events_expected > 0) << s.info.name;
  }
  EXPECT_GT(rep.stages[static_cast<size_t>(test::stage_of(run, "splitk.partial"))].events_missing, 0u);
  ASSERT_FALSE(rep.anomalies.empty());
  EXPECT_EQ(rep.anomalies.back().rfind("7 events were dropped", 0), 0u) << rep.anomalies.back();
}

// The earliest failing event of a judged report, by brute force over every pair.
int64_t earliest_failing(const RunView& run, const AnalysisReport& rep) {
  int64_t best = -1;
  for (size_t i = 0; i < run.num_events(); ++i) {
    if (rep.events[i].passes) continue;
    bool earliest = true;
    for (size_t k = 0; k < run.num_events() && earliest; ++k)
      if (!rep.events[k].passes && order_key(run.headers[k], run.stages) < order_key(run.headers[i], run.stages))
        earliest = false;
    if (earliest && best < 0) best = static_cast<int64_t>(i);
  }
  return best;
}

// An event's title says where it sits in words true of every stage: its step is its number in its
// block's own order (tilescope/event.h), which the title calls it, checked against the order of the
// block's events, over every stage of every built-in kernel (was: "splitk2.partial, ..., split 0,
// step 4 (keys 0-255)": the partial, written after its split's four tile events, read as a fifth kv
// step).
TEST(EventTitles, EveryStageOfEveryKernelSaysEachEventsPlaceInItsBlock) {
  TS_SEEDED(seed);
  for (const KernelKind kernel : built_kernels()) {
    SCOPED_TRACE(std::string(to_string(kernel)));
    test::LaunchSpec spec;
    spec.config = test::make_config(kernel, Fault::none, built_dtypes(kernel).front(), built_head_dims(kernel).front(), 40,
                                    300, false, splits_kv(kernel) ? 2 : 0);
    spec.seed = seed;
    spec.tile_events = true;
    const RunView run = test::launch_run(spec);
    std::map<std::pair<int32_t, int32_t>, int32_t> placed;  // (pass, block) -> its events so far
    std::set<std::string> titled;
    for (const size_t i : kernel_order(run.headers, run.stages)) {
      const EventHeader& h = run.headers[i];
      const StageInfo& st = run.stages[static_cast<size_t>(h.stage)];
      const int32_t place = placed[{st.pass, h.block}]++;
      const std::string title = describe_event(h, run.stages, run.attention);
      EXPECT_EQ(title.rfind(st.name + ", batch " + std::to_string(h.batch) + " head " + std::to_string(h.head), 0), 0u)
          << title;
      EXPECT_EQ(title.find(", step "), std::string::npos) << title;
      if (st.kind == StageKind::final) {
        EXPECT_TRUE(title.ends_with(" (the output)")) << title;
        EXPECT_EQ(title.find(" of its block"), std::string::npos) << title;
      } else {
        // The states and merges of a block come first in it (event_identity.h: OrderKey).
        EXPECT_EQ(h.step, place) << title << ": the kernel numbers its block's events";
        const std::string split = h.split >= 0 ? ", split " + std::to_string(h.split) : "";
        EXPECT_NE(title.find(split + ", event " + std::to_string(place) + " of its block (keys "), std::string::npos)
            << title;
      }
      titled.insert(st.name);
    }
    for (const StageInfo& st : kernel_stage_table(kernel)) EXPECT_TRUE(titled.count(st.name)) << st.name << " has no event";
  }
}

// The where line names the steps of a stage's wrong events as the titles do, each event's number
// in its block (was: "steps 1-3 (of 0-3)", a word that read as kv steps although the block's
// partial is its next event). Split-K 2 with the accumulator not reset between kv tiles: in each
// split's block the first tile event is right and every later one wrong; the reduce, merging
// those partials, is wrong in every event of its blocks. The report's text, the JSON's texts (its
// keys stay "step" and "steps") and the first divergence's title say it alike.
TEST(WhereLines, SplitK2SaysTheWrongEventsPlacesInTheirBlocksAsTheTitlesDo) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const int64_t tiles = std::uniform_int_distribution<int64_t>(2, 4)(rng);   // kv tiles per split
  const int64_t splits = std::uniform_int_distribution<int64_t>(2, 3)(rng);
  const int64_t seq_q = std::uniform_int_distribution<int64_t>(1, 40)(rng);
  test::LaunchSpec spec;
  spec.config = make_config(KernelKind::splitk2, Fault::stale_accumulator, DType::f16, 64, seq_q,
                            tiles * splits * kFa2BlockN, false, splits, 1, 2);
  spec.seed = seed;
  spec.tile_events = true;
  const RunView run = test::launch_run(spec);
  RunReference ref(run, on_cpu());
  const AnalysisReport rep = analyze_run(run, ref, 2);
  ASSERT_FALSE(rep.clean()) << rep.symptom.line;
  const std::string last = std::to_string(tiles - 1);
  const std::string wrong_tiles = tiles == 2 ? "event 1 of its block only (of 0-1)"
                                             : "events 1-" + last + " of their blocks (of 0-" + last + ")";
  const std::string every_merge = "all events of their blocks (0-" + std::to_string(splits - 1) + ")";
  const nlohmann::json j = report_json(rep);
  const std::string text = report_text(rep);
  for (const auto& [stage, said] : {std::pair<std::string, std::string>{"splitk2.tile", wrong_tiles},
                                    {"splitk.reduce", every_merge}}) {
    SCOPED_TRACE(stage);
    const FailingSets& f = rep.stages[static_cast<size_t>(test::stage_of(run, stage))].failing;
    // The sets themselves, from the run's events: the text says these.
    std::set<int64_t> failing, compared;
    for (size_t i = 0; i < run.num_events(); ++i) {
      if (run.stages[static_cast<size_t>(run.headers[i].stage)].name != stage || !rep.events[i].compared) continue;
      compared.insert(run.headers[i].step);
      if (!rep.events[i].passes) failing.insert(run.headers[i].step);
    }
    EXPECT_EQ(f.steps.failing, std::vector<int64_t>(failing.begin(), failing.end()));
    EXPECT_EQ(f.steps.compared, std::vector<int64_t>(compared.begin(), compared.end()));
    const std::string where = "where:            " + stage + ": " + failing_sets_text(f);
    EXPECT_NE(where.find(", " + said + ", "), std::string::npos) << where;
    EXPECT_EQ(where.find("step"), std::string::npos) << where;
    EXPECT_NE(text.find(where + "\n"), std::string::npos) << text;
    const nlohmann::json& steps = j["failing_sets"][stage]["steps"];
    EXPECT_EQ(steps["text"], said);
    EXPECT_EQ(steps["of"], compared.size());
    EXPECT_EQ(j["failing_sets"][stage]["text"], failing_sets_text(f));
  }
  // The first divergence: the first block's second tile event, titled as the where line counts it.
  ASSERT_TRUE(rep.first_divergence.found);
  EXPECT_EQ(j["first_divergence"]["step"], 1);
  EXPECT_NE(text.find("first divergence: splitk2.tile, batch 0 head 0, "), std::string::npos) << text;
  EXPECT_NE(text.find(", split 0, event 1 of its block (keys 0-127)"), std::string::npos) << text;
}

TEST(AnalysisPhases, FirstDivergenceIsTheEarliestProblemInTheKernelsOrder) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  RunView run = launch(double_count_config(rng), seed);
  {
    RunReference ref(run, on_cpu());
    Judged j = judge(run, ref);
    collect_missing_events(run, j.report);
    find_first_divergence(run, ref, j.report);
    const Divergence& d = j.report.first_divergence;
    const int64_t want = earliest_failing(run, j.report);
    ASSERT_GE(want, 0);
    EXPECT_EQ(j.report.verdict, Verdict::divergence);
    EXPECT_TRUE(d.found);
    EXPECT_FALSE(d.missing);
    EXPECT_EQ(d.event_index, want);
    EXPECT_EQ(d.first_failing_event, want);
    EXPECT_EQ(run.headers[static_cast<size_t>(want)].stage, test::stage_of(run, "splitk.reduce"));
    const EventComparison cmp = compare_event(run, ref, static_cast<size_t>(want));
    ASSERT_EQ(d.query_rows.size(), cmp.failing_rows().size());
    for (size_t k = 0; k < d.query_rows.size(); ++k)
      EXPECT_EQ(d.query_rows[k], int64_t{d.header.q_begin} + cmp.failing_rows()[k]);
    EXPECT_EQ(d.columns, cmp.failing_columns());
    EXPECT_FALSE(d.columns.empty());
  }
  // A partial state the kernel never wrote comes before every merge: it is the divergence, with
  // every row it should have held, and the first written failure is still named.
  const int32_t partial = test::stage_of(run, "splitk.partial");
  EventHeader never_written{};
  for (const EventHeader& h : run.headers)
    if (h.stage == partial) never_written = h;
  run.missing.push_back(never_written);
  {
    RunReference ref(run, on_cpu());
    Judged j = judge(run, ref);
    collect_missing_events(run, j.report);
    find_first_divergence(run, ref, j.report);
    const Divergence& d = j.report.first_divergence;
    EXPECT_TRUE(d.found);
    EXPECT_TRUE(d.missing);
    EXPECT_EQ(d.missing_index, 0);
    EXPECT_EQ(d.event_index, -1);
    EXPECT_EQ(event_key(d.header), event_key(never_written));
    EXPECT_EQ(d.query_rows.size(), static_cast<size_t>(never_written.rows));
    EXPECT_EQ(d.first_failing_event, earliest_failing(run, j.report));
    EXPECT_EQ(j.report.verdict, Verdict::divergence);
  }
  // A correct kernel: no divergence, a clean verdict.
  const RunView clean = launch(make_config(KernelKind::splitk, Fault::none, DType::f32, 64, 17, 333, true, 3), seed);
  RunReference ref(clean, on_cpu());
  Judged j = judge(clean, ref);
  collect_missing_events(clean, j.report);
  find_first_divergence(clean, ref, j.report);
  EXPECT_FALSE(j.report.first_divergence.found);
  EXPECT_EQ(j.report.first_divergence.first_failing_event, -1);
  EXPECT_EQ(j.report.verdict, Verdict::clean);
}

// A row of an unnormalised event whose l the kernel left at 0 over a finite O: its O/l is
// infinite though every value the trace holds is finite. The worst cell is that O/l, and it says
// that the row's l is 0 (text and JSON); the stage counts no non-finite value.
TEST(AnalysisPhases, AnInfiniteOOverLFromAZeroLSaysSo) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const int64_t seq_q = std::uniform_int_distribution<int64_t>(9, 40)(rng);
  const int64_t seq_kv = std::uniform_int_distribution<int64_t>(200, 600)(rng);
  EditableRun e = editable(
      launch(make_config(KernelKind::splitk, Fault::none, DType::f32, 64, seq_q, seq_kv, false, 3, 1, 2), seed));
  const RunView& run = e.view;
  const int32_t partial = test::stage_of(run, "splitk.partial");
  // The rows of partial states that saw keys (l > 0; a row that saw none already holds l = 0).
  std::vector<std::pair<size_t, int32_t>> rows_with_keys;
  for (size_t i = 0; i < run.recorded_events; ++i)
    if (run.headers[i].stage == partial)
      for (int32_t r = 0; r < run.headers[i].rows; ++r)
        if (run.event(i).l[static_cast<size_t>(r)] > 0.0f) rows_with_keys.emplace_back(i, r);
  ASSERT_FALSE(rows_with_keys.empty());
  const auto [event, row] = rows_with_keys[std::uniform_int_distribution<size_t>(0, rows_with_keys.size() - 1)(rng)];
  // Where the view reads that row's l (the payloads' layout is the view's business).
  float& l_of_row = (*e.l)[static_cast<size_t>(run.event(event).l.data() - e.l->data()) + static_cast<size_t>(row)];
  const float true_l = l_of_row;
  l_of_row = 0.0f;

  RunReference ref(run, on_cpu());
  const AnalysisReport rep = analyze_run(run, ref, 2);
  ASSERT_TRUE(rep.worst_cell.has_value()) << report_text(rep);
  const WorstCell& w = *rep.worst_cell;
  EXPECT_EQ(w.event_index, static_cast<int64_t>(event));
  EXPECT_EQ(w.query, int64_t{run.headers[event].q_begin} + row);
  EXPECT_EQ(w.quantity, "O/l");
  EXPECT_FALSE(std::isfinite(w.trace));
  ASSERT_TRUE(w.trace_l.has_value());
  EXPECT_EQ(*w.trace_l, 0.0);
  EXPECT_NE(describe_worst_cell(w, rep).find("the trace's l of that row is 0"), std::string::npos)
      << describe_worst_cell(w, rep);
  EXPECT_EQ(report_json(rep)["worst_cell"]["trace_l"], 0.0);
  EXPECT_EQ(rep.stages[static_cast<size_t>(partial)].non_finite.nan, 0u);

  // A finite wrong l instead: O/l is finite, and nothing is said of l.
  l_of_row = 3.0f * true_l;
  RunReference ref2(run, on_cpu());
  const AnalysisReport again = analyze_run(run, ref2, 2);
  ASSERT_TRUE(again.worst_cell.has_value());
  EXPECT_TRUE(std::isfinite(again.worst_cell->trace));
  EXPECT_EQ(describe_worst_cell(*again.worst_cell, again).find("the trace's l"), std::string::npos);
}

// Events whose headers contradict the run (here: a kv head the GQA mapping does not give) are
// recorded but not compared. The stage figures count them, and when they would have come before
// the first divergence in the kernel's order, the divergence says so rather than presenting the
// later stage as the first place the kernel went wrong.
TEST(AnalysisPhases, EventsNotComparedAreCountedAndNamedBeforeTheFirstDivergence) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const RunView run = launch(double_count_config(rng), seed);
  ASSERT_EQ(run.attention.heads_kv, run.attention.heads_q);
  ASSERT_GE(run.attention.heads_q, 2);
  const int32_t partial = test::stage_of(run, "splitk.partial");
  const int32_t output = test::stage_of(run, "final");
  ASSERT_GE(partial, 0);
  ASSERT_GE(output, 0);

  // Declares a wrong kv head on a random, non-empty subset of the events of `stage`.
  auto declare_wrong_kv_head = [&](RunView& v, int32_t stage) {
    std::vector<size_t> of_stage;
    for (size_t i = 0; i < v.num_events(); ++i)
      if (v.headers[i].stage == stage) of_stage.push_back(i);
    std::shuffle(of_stage.begin(), of_stage.end(), rng);
    of_stage.resize(std::uniform_int_distribution<size_t>(1, of_stage.size())(rng));
    for (size_t i : of_stage) {
      EventHeader& h = v.headers[i];
      h.kv_head = static_cast<int32_t>((v.attention.kv_head_of(h.head) + 1) % v.attention.heads_kv);
    }
    std::sort(of_stage.begin(), of_stage.end());
    return of_stage;
  };
  auto recorded = [&](const RunView& v, int32_t stage) {
    uint64_t n = 0;
    for (const EventHeader& h : v.headers) n += h.stage == stage;
    return n;
  };

  // Partial states come before every merge: left out, they could hold the first divergence.
  RunView before = run;
  const std::vector<size_t> edited = declare_wrong_kv_head(before, partial);
  const AnalysisReport rep = analyze_run(before, AnalysisOptions{});
  ASSERT_TRUE(rep.first_divergence.found);
  // The merges run in a later pass than every partial state.
  ASSERT_GT(before.stages[static_cast<size_t>(rep.first_divergence.header.stage)].pass, 0);
  const StageReport& ps = rep.stages[static_cast<size_t>(partial)];
  EXPECT_EQ(ps.events_not_compared, edited.size());
  EXPECT_EQ(ps.events_compared + ps.events_not_compared, recorded(before, partial));
  EXPECT_EQ(ps.first_not_compared_event, static_cast<int64_t>(edited.front()));
  EXPECT_NE(ps.not_compared_reason.find("kv head"), std::string::npos) << ps.not_compared_reason;
  const std::vector<UncomparedBefore>& nb = rep.first_divergence.not_compared_before;
  ASSERT_EQ(nb.size(), 1u);
  EXPECT_EQ(nb[0].stage, partial);
  EXPECT_EQ(nb[0].events, edited.size());
  EXPECT_NE(std::find(edited.begin(), edited.end(), static_cast<size_t>(nb[0].first_event)), edited.end());
  for (size_t i : edited)
    EXPECT_FALSE(order_key(before.headers[i], before.stages) < order_key(before.headers[static_cast<size_t>(nb[0].first_event)], before.stages));
  EXPECT_EQ(nb[0].reason, comparison_problem(before, static_cast<size_t>(nb[0].first_event)));

  const std::string text = report_text(rep);
  const std::string line = std::to_string(edited.size()) + " earlier events of stage splitk.partial were not compared";
  const size_t at_divergence = text.find("first divergence:");
  ASSERT_NE(at_divergence, std::string::npos) << text;
  EXPECT_NE(text.find(line, at_divergence), std::string::npos) << text;
  EXPECT_NE(text.find("not compared:     " + std::to_string(edited.size()) + " splitk.partial events"), std::string::npos)
      << text;
  const nlohmann::json j = report_json(rep);
  EXPECT_EQ(j["stages"]["splitk.partial"]["events"]["not_compared"], edited.size());
  EXPECT_EQ(j["stages"]["splitk.partial"]["not_compared"]["first_event"], edited.front());
  ASSERT_EQ(j["first_divergence"]["not_compared_before"].size(), 1u);
  EXPECT_EQ(j["first_divergence"]["not_compared_before"][0]["stage"], "splitk.partial");
  EXPECT_EQ(j["first_divergence"]["not_compared_before"][0]["events"], edited.size());

  // Final outputs left out: counted; named at the divergence only where they come before it in
  // the kernel's order.
  RunView after = run;
  const std::vector<size_t> late = declare_wrong_kv_head(after, output);
  const AnalysisReport late_rep = analyze_run(after, AnalysisOptions{});
  ASSERT_TRUE(late_rep.first_divergence.found);
  const StageReport& os = late_rep.stages[static_cast<size_t>(output)];
  EXPECT_EQ(os.events_not_compared, late.size());
  EXPECT_EQ(os.events_compared + os.events_not_compared, recorded(after, output));
  const OrderKey at = order_key(late_rep.first_divergence.header, after.stages);
  uint64_t earlier = 0;
  for (size_t i : late) earlier += order_key(after.headers[i], after.stages) < at;
  const std::vector<UncomparedBefore>& late_nb = late_rep.first_divergence.not_compared_before;
  ASSERT_EQ(late_nb.size(), earlier > 0 ? 1u : 0u);
  if (earlier > 0) {
    EXPECT_EQ(late_nb[0].stage, output);
    EXPECT_EQ(late_nb[0].events, earlier);
  } else {
    EXPECT_EQ(report_text(late_rep).find("earlier events of stage"), std::string::npos);
    EXPECT_TRUE(report_json(late_rep)["first_divergence"]["not_compared_before"].empty());
  }

  // Nothing left out: no count, no line.
  const AnalysisReport whole = analyze_run(run, AnalysisOptions{});
  for (const StageReport& st : whole.stages) EXPECT_EQ(st.events_not_compared, 0u) << st.info.name;
  EXPECT_EQ(report_text(whole).find("not compared:"), std::string::npos);
  EXPECT_EQ(whole.symptom.line.find("not compared"), std::string::npos) << whole.symptom.line;
}

// A clean verdict with events left out says so in its symptom line: "clean" is about the events
// that were compared.
TEST(AnalysisPhases, ACleanVerdictCountsTheEventsItDidNotCompare) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  RunView run = launch(make_config(KernelKind::splitk, Fault::none, DType::f32, 64, 17, 333, true, 3, 1, 2), seed);
  ASSERT_EQ(run.attention.heads_kv, 2);
  ASSERT_TRUE(analyze_run(run, AnalysisOptions{}).clean());
  const std::string quiet = analyze_run(run, AnalysisOptions{}).symptom.line;
  EXPECT_EQ(quiet.find("not compared"), std::string::npos) << quiet;
  // A random non-empty subset of the events declares a kv head the mapping does not give.
  std::vector<size_t> all(run.num_events());
  std::iota(all.begin(), all.end(), size_t{0});
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::uniform_int_distribution<size_t>(1, std::min<size_t>(all.size(), 40))(rng));
  for (size_t i : all) {
    EventHeader& h = run.headers[i];
    h.kv_head = static_cast<int32_t>((run.attention.kv_head_of(h.head) + 1) % run.attention.heads_kv);
  }
  const AnalysisReport rep = analyze_run(run, AnalysisOptions{});
  ASSERT_TRUE(rep.clean()) << rep.symptom.line;
  const std::string said = all.size() == 1 ? "; 1 more recorded event was not compared"
                                           : "; " + std::to_string(all.size()) + " more recorded events were not compared";
  EXPECT_NE(rep.symptom.line.find(said), std::string::npos)
      << rep.symptom.line;
}

TEST(AnalysisPhases, TheSymptomReadsTheReportThePhasesMade) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const RunView run = test::blind(launch(double_count_config(rng), seed));
  RunReference ref(run, on_cpu());
  Judged j = judge(run, ref);
  build_error_grids(run, j.row_errors, j.report);
  collect_missing_events(run, j.report);
  mark_absent_cells(j.report);
  find_first_divergence(run, ref, j.report);
  measure_failing_sets(run, ref, j.row_errors, j.report);
  find_worst_cells(run, ref, j.report);
  j.report.symptom = diagnose(j.report, run, ref, 2);
  EXPECT_EQ(j.report.symptom.category, SymptomKind::reduce_scaled_by_l) << j.report.symptom.line;

  // The phases in order are the analysis: the same report as analyze_run's.
  RunReference ref2(run, on_cpu());
  const AnalysisReport whole = analyze_run(run, ref2, 2);
  EXPECT_EQ(report_json(j.report), report_json(whole));
}

}  // namespace
}  // namespace ts
