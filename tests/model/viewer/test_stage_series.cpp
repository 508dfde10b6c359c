// The detail's curves where query rows are few (app/model/viewer/stage_series.h), on Split-K
// decode runs captured at test time: the series of a partial is its pair's partials, one per
// split in split order; each point is that event's own comparison (compare_event) and verdict;
// runs with many query rows keep their curves over the rows; across a GQA group, a point per query
// head sharing the event's kv head, each that head's own event. Seeded inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/viewer/stage_series.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

int32_t stage_named(const RunView& run, const std::string& name) {
  for (size_t s = 0; s < run.stages.size(); ++s)
    if (run.stages[s].name == name) return static_cast<int32_t>(s);
  return -1;
}

// The run's events of a stage, in the trace's order.
std::vector<size_t> events_of_stage(const RunView& run, int32_t stage) {
  std::vector<size_t> out;
  for (size_t i = 0; i < run.num_events(); ++i)
    if (run.headers[i].stage == stage) out.push_back(i);
  return out;
}

TEST(StageSeries, APartialRunsOverItsPairsSplits) {
  TS_SEEDED(seed);
  const AttentionConfig config = test::splitk_decode_gqa(Fault::double_count_l);
  const LoadedRun loaded = test::capture_cpu(config, seed);
  const RunView& run = *loaded.run;
  const int32_t partial = stage_named(run, "splitk.partial");
  ASSERT_GE(partial, 0);
  // A random partial of a random pair.
  std::mt19937_64 rng(seed);
  const std::vector<size_t> partials = events_of_stage(run, partial);
  ASSERT_FALSE(partials.empty());
  const size_t pick = partials[rng() % partials.size()];
  const EventHeader& h = run.headers[pick];

  const auto series = stage_series(run, *loaded.reference, *loaded.report, pick);
  ASSERT_TRUE(series.has_value());
  EXPECT_EQ(series->x_label, "split");
  ASSERT_EQ(series->events.size(), static_cast<size_t>(config.num_splits));
  EXPECT_EQ(series->events[series->selected], pick);
  for (size_t k = 0; k < series->events.size(); ++k) {
    const EventHeader& e = run.headers[series->events[k]];
    EXPECT_EQ(e.stage, partial);
    EXPECT_EQ(std::pair(e.batch, e.head), std::pair(h.batch, h.head));
    EXPECT_EQ(e.split, static_cast<int32_t>(k));
    const EventComparison c = compare_event(run, *loaded.reference, series->events[k]);
    EXPECT_EQ(series->m_trace[k], c.m_trace.front());
    EXPECT_EQ(series->m_reference[k], c.m_reference.front());
    EXPECT_EQ(series->l_trace[k], c.l_trace.front());
    EXPECT_EQ(series->l_reference[k], c.l_reference.front());
    EXPECT_EQ(series->worst[k], loaded.report->events[series->events[k]].worst_ratio);
  }
  // Past the events: an error, never a crash.
  EXPECT_THROW(stage_series(run, *loaded.reference, *loaded.report, run.num_events()), std::out_of_range);
}

// A partial series whose first splits' events were not compared (filtered out of the report):
// x is each point's split, not its position, or the series falls back to the kernel's order.
TEST(StageSeries, APartialSeriesWithoutItsFirstSplitsSaysEachPointsSplit) {
  TS_SEEDED(seed);
  const AttentionConfig config = test::splitk_decode_gqa(Fault::double_count_l);
  ASSERT_GE(config.num_splits, 3);
  const LoadedRun loaded = test::capture_cpu(config, seed);
  const RunView& run = *loaded.run;
  const int32_t partial = stage_named(run, "splitk.partial");
  ASSERT_GE(partial, 0);
  std::mt19937_64 rng(seed);
  const std::vector<size_t> partials = events_of_stage(run, partial);
  ASSERT_FALSE(partials.empty());
  const EventHeader& pair = run.headers[partials[rng() % partials.size()]];
  // Drop the pair's splits below `skip` from the comparison; pick one of the rest.
  const int32_t skip = std::uniform_int_distribution<int32_t>(1, static_cast<int32_t>(config.num_splits) - 2)(rng);
  AnalysisReport report = *loaded.report;
  size_t pick = run.num_events();
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (h.stage != partial || h.batch != pair.batch || h.head != pair.head) continue;
    if (h.split < skip) report.events[i].compared = false;
    else if (pick == run.num_events()) pick = i;
  }
  ASSERT_LT(pick, run.num_events());
  const auto series = stage_series(run, *loaded.reference, report, pick);
  ASSERT_TRUE(series.has_value());
  EXPECT_EQ(series->x_label, "split");
  EXPECT_EQ(series->first_x, skip);
  ASSERT_EQ(series->events.size(), static_cast<size_t>(config.num_splits - skip));
  for (size_t k = 0; k < series->events.size(); ++k)
    EXPECT_EQ(run.headers[series->events[k]].split, series->first_x + static_cast<int64_t>(k));
  // A gap inside the splits (split 1 of 0-3 not compared): no x can be each point's split, so the
  // points count in the kernel's order.
  AnalysisReport gapped_report = *loaded.report;
  size_t first_split = run.num_events();
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (h.stage != partial || h.batch != pair.batch || h.head != pair.head) continue;
    if (h.split == 1) gapped_report.events[i].compared = false;
    if (h.split == 0) first_split = i;
  }
  ASSERT_LT(first_split, run.num_events());
  const auto gapped = stage_series(run, *loaded.reference, gapped_report, first_split);
  ASSERT_TRUE(gapped.has_value());
  EXPECT_EQ(gapped->events.size(), static_cast<size_t>(config.num_splits - 1));
  EXPECT_EQ(gapped->x_label, "event (kernel order)");
  EXPECT_EQ(gapped->first_x, 0);
}

// The reduce merges split after split: a point per split; the running state's tiles (a kv tile
// per event over every split) count events in the kernel's order.
TEST(StageSeries, TheReduceCountsSplitsTheTilesCountEvents) {
  TS_SEEDED(seed);
  const AttentionConfig config = test::splitk_decode_gqa(Fault::none);
  const LoadedRun loaded = test::capture_cpu(config, seed);
  const RunView& run = *loaded.run;
  for (const auto& [name, label] : {std::pair<std::string, std::string>{"splitk.reduce", "split"},
                                    {"splitk.tile", "event (kernel order)"}}) {
    const int32_t stage = stage_named(run, name);
    ASSERT_GE(stage, 0) << name;
    size_t first = 0;
    while (first < run.num_events() && run.headers[first].stage != stage) ++first;
    ASSERT_LT(first, run.num_events());
    const auto series = stage_series(run, *loaded.reference, *loaded.report, first);
    ASSERT_TRUE(series.has_value()) << name;
    EXPECT_EQ(series->x_label, label) << name;
    size_t count = 0;
    for (size_t i = 0; i < run.num_events(); ++i) {
      const EventHeader& h = run.headers[i];
      count += h.stage == stage && h.batch == run.headers[first].batch && h.head == run.headers[first].head;
    }
    EXPECT_EQ(series->events.size(), count) << name;
    for (size_t k = 0; k < series->worst.size(); ++k) EXPECT_LE(series->worst[k], 1.0f) << name;
  }
}

// FA-2 decode: a query tile's running state, one event per kv tile of one block; x is each
// event's number in its block, as the event's title says it ("event 3 of its block"; the axis was
// "step").
TEST(StageSeries, ARunningStateOfOneBlockCountsItsEventsInTheBlock) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  AttentionConfig config;
  config.kernel = KernelKind::fa2;
  config.fault = Fault::stale_accumulator;
  config.heads = 2;
  config.seq_q = std::uniform_int_distribution<int64_t>(1, 8)(rng);
  config.seq_kv = std::uniform_int_distribution<int64_t>(130, 700)(rng);
  config.head_dim = 64;
  config.dtype = DType::f16;
  const LoadedRun loaded = test::capture_cpu(config, seed);
  const RunView& run = *loaded.run;
  const int32_t stage = stage_named(run, "fa2.step");
  ASSERT_GE(stage, 0);
  const std::vector<size_t> of_stage = events_of_stage(run, stage);
  ASSERT_FALSE(of_stage.empty());
  const size_t pick = of_stage[rng() % of_stage.size()];
  const auto series = stage_series(run, *loaded.reference, *loaded.report, pick);
  ASSERT_TRUE(series.has_value());
  EXPECT_EQ(series->x_label, "event of its block");
  EXPECT_EQ(series->events[series->selected], pick);
  EXPECT_EQ(series->events.size(), static_cast<size_t>((config.seq_kv + 63) / 64)) << "one event per kv tile";
  for (size_t k = 0; k < series->events.size(); ++k) {
    const EventHeader& e = run.headers[series->events[k]];
    EXPECT_EQ(e.block, run.headers[pick].block);
    EXPECT_EQ(e.step, series->first_x + static_cast<int64_t>(k));
  }
  const std::string title = describe_event(run.headers[pick], run.stages, run.attention);
  const int64_t x = series->first_x + static_cast<int64_t>(series->selected);
  EXPECT_NE(title.find(", event " + std::to_string(x) + " of its block ("), std::string::npos) << title;
}

// Across the GQA group (8 query heads on 2 kv heads: heads 4k..4k+3 on kv head k): a random
// event's group is its kv head's four heads, each point that head's event of the same stage,
// split, step and keys, compared on its own; the fault (l counted twice) shows in every head.
TEST(StageSeries, AGroupSeriesRunsOverTheHeadsOfItsKvHead) {
  TS_SEEDED(seed);
  const AttentionConfig config = test::splitk_decode_gqa(Fault::double_count_l);
  const LoadedRun loaded = test::capture_cpu(config, seed);
  const RunView& run = *loaded.run;
  std::mt19937_64 rng(seed);
  for (const char* name : {"splitk.partial", "splitk.reduce", "splitk.tile"}) {
    SCOPED_TRACE(name);
    const int32_t stage = stage_named(run, name);
    ASSERT_GE(stage, 0);
    std::vector<size_t> of_stage;
    for (size_t i = 0; i < run.num_events(); ++i)
      if (run.headers[i].stage == stage) of_stage.push_back(i);
    const size_t pick = of_stage[rng() % of_stage.size()];
    const EventHeader& h = run.headers[pick];
    const auto series = group_series(run, *loaded.reference, *loaded.report, pick);
    ASSERT_TRUE(series.has_value());
    const int32_t kv = h.head / 4;
    EXPECT_EQ(series->x_label, "query head");
    EXPECT_EQ(series->first_x, 4 * kv);
    EXPECT_EQ(series->group, "kv head " + std::to_string(kv) + ": heads " + std::to_string(4 * kv) + "-" +
                                 std::to_string(4 * kv + 3));
    ASSERT_EQ(series->events.size(), size_t{4});
    EXPECT_EQ(series->events[series->selected], pick);
    EXPECT_EQ(series->selected, static_cast<size_t>(h.head - 4 * kv));
    for (size_t k = 0; k < 4; ++k) {
      const size_t i = series->events[k];
      const EventHeader& e = run.headers[i];
      EXPECT_EQ(e.head, 4 * kv + static_cast<int32_t>(k));
      EXPECT_EQ(std::tuple(e.stage, e.batch, e.q_begin, e.split, e.step), std::tuple(h.stage, h.batch, h.q_begin, h.split, h.step));
      EXPECT_EQ(event_key_end(e, run.stages[static_cast<size_t>(e.stage)], run.attention),
                event_key_end(h, run.stages[static_cast<size_t>(h.stage)], run.attention));
      const EventComparison c = compare_event(run, *loaded.reference, i);
      EXPECT_EQ(series->m_trace[k], c.m_trace.front());
      EXPECT_EQ(series->m_reference[k], c.m_reference.front());
      EXPECT_EQ(series->l_trace[k], c.l_trace.front());
      EXPECT_EQ(series->l_reference[k], c.l_reference.front());
      EXPECT_EQ(series->worst[k], loaded.report->events[i].worst_ratio);
    }
  }
  EXPECT_THROW(group_series(run, *loaded.reference, *loaded.report, run.num_events()), std::out_of_range);
}

// Without GQA (a kv head per query head) there is no group to run across.
TEST(StageSeries, NoGroupWithoutGqa) {
  TS_SEEDED(seed);
  AttentionConfig config = test::splitk_decode_gqa(Fault::none);
  config.heads_kv = config.heads;
  const LoadedRun loaded = test::capture_cpu(config, seed);
  EXPECT_FALSE(group_series(*loaded.run, *loaded.reference, *loaded.report, 0).has_value());
  EXPECT_TRUE(stage_series(*loaded.run, *loaded.reference, *loaded.report, 0).has_value());
}

TEST(StageSeries, ManyQueryRowsKeepTheirCurves) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_small(Fault::none), seed);
  EXPECT_FALSE(stage_series(*loaded.run, *loaded.reference, *loaded.report, 0).has_value());
}

}  // namespace
}  // namespace ts
