// Stepping through a captured run's events in the kernels' own order: Split-K's partials before
// the reduce that reads them, the reduce merging split after split, then the final output;
// [ ] Home End and the slider within the run or one tile; N visits every failing event in
// order; Shift+N lands on the analysis's first divergence; playback paces the steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "app/model/viewer/event_stepper.h"
#include "tests/gui/viewer_fixtures.h"
#include "tests/model/test_seed.h"

namespace ts {
namespace {

// The run's events in a shuffled file order (payloads moved with their headers): the stepper
// must not rely on the file being in the kernels' order.
RunView shuffled(const RunView& run, std::mt19937_64& rng, std::vector<size_t>& old_index) {
  const size_t n = run.num_events();
  old_index.resize(n);
  std::iota(old_index.begin(), old_index.end(), size_t{0});
  std::shuffle(old_index.begin(), old_index.end(), rng);
  auto payload = std::make_shared<std::array<std::vector<float>, 3>>();
  RunView v = run;
  v.headers.clear();
  for (size_t i : old_index) {
    const RunEvent e = run.event(i);
    v.headers.push_back(e.header);
    (*payload)[0].insert((*payload)[0].end(), e.m.begin(), e.m.end());
    (*payload)[1].insert((*payload)[1].end(), e.l.begin(), e.l.end());
    (*payload)[2].insert((*payload)[2].end(), e.o.begin(), e.o.end());
  }
  v.m = (*payload)[0];
  v.l = (*payload)[1];
  v.o = (*payload)[2];
  v.payload_owner = payload;
  return v;
}

// The kernels' order written out for Split-K, from the stages' meaning: every partial (by
// batch, head, query tile, split) before any reduce; per tile, the reduce's steps by split,
// then the final output.
bool splitk_before(const EventHeader& a, const EventHeader& b) {
  auto pass = [](const EventHeader& h) { return h.stage == static_cast<int32_t>(Stage::splitk_partial) ? 0 : 1; };
  if (pass(a) != pass(b)) return pass(a) < pass(b);
  if (a.batch != b.batch) return a.batch < b.batch;
  if (a.head != b.head) return a.head < b.head;
  if (a.q_tile != b.q_tile) return a.q_tile < b.q_tile;
  auto within = [](const EventHeader& h) {
    return h.stage == static_cast<int32_t>(Stage::final_output) ? 1 << 20 : h.split;
  };
  return within(a) < within(b);
}

TEST(EventStepper, SplitKEventsInTheKernelsOrderWhateverTheFileOrder) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const LoadedRun loaded = testing::capture_cpu(testing::splitk_small(Fault::double_count_l), seed);
  std::vector<size_t> old_index;
  const RunView run = shuffled(*loaded.run, rng, old_index);
  AnalysisReport report = *loaded.report;  // verdicts follow the events into their new places
  for (size_t i = 0; i < old_index.size(); ++i) report.events[i] = loaded.report->events[old_index[i]];
  report.first_divergence.event_index = static_cast<int64_t>(
      std::find(old_index.begin(), old_index.end(), static_cast<size_t>(loaded.report->first_divergence.event_index)) -
      old_index.begin());
  const EventStepper s(run, report);
  ASSERT_EQ(s.num_events(), run.num_events());
  ASSERT_GT(s.num_events(), 20u);
  for (size_t p = 1; p < s.order().size(); ++p) {
    const EventHeader& a = run.headers[s.order()[p - 1]];
    const EventHeader& b = run.headers[s.order()[p]];
    EXPECT_FALSE(splitk_before(b, a)) << "position " << p << ": " << kStageNames[b.stage] << " q-tile " << b.q_tile
                                      << " split " << b.split << " after " << kStageNames[a.stage] << " q-tile "
                                      << a.q_tile << " split " << a.split;
  }
  std::vector<size_t> sorted = s.order();
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i) << "each event once";
}

TEST(EventStepper, StepsWithinTheRunOrOneTileAndStopsAtTheEnds) {
  TS_SEEDED(seed);
  const LoadedRun loaded = testing::capture_cpu(testing::splitk_small(Fault::double_count_l), seed);
  const RunView& run = *loaded.run;
  EventStepper s(run, *loaded.report);
  EXPECT_FALSE(s.selected().has_value());
  EXPECT_TRUE(s.step(1)) << "the first step selects the first event";
  EXPECT_EQ(s.selected(), s.order().front());
  EXPECT_FALSE(s.step(-1)) << "already first";
  for (size_t p = 1; p < s.num_events(); ++p) {
    ASSERT_TRUE(s.step(1));
    EXPECT_EQ(s.selected(), s.order()[p]);
    EXPECT_EQ(s.scope_position(), p);
  }
  EXPECT_FALSE(s.step(1)) << "stops at the last event";
  EXPECT_TRUE(s.to_first());
  EXPECT_EQ(s.selected(), s.order().front());
  EXPECT_TRUE(s.step(1000));
  EXPECT_EQ(s.selected(), s.order().back()) << "clamped";
  s.select_scope_position(5);
  EXPECT_EQ(s.selected(), s.order()[5]);

  // Tile scope: a reduce event's tile, stepped from its first event to its last — the
  // partials, the reduce merging split 0, 1, 2, 3, then the final output.
  size_t reduce = 0;
  for (size_t e : s.order())
    if (run.headers[e].stage == static_cast<int32_t>(Stage::splitk_reduce) && run.headers[e].q_tile == 1) {
      reduce = e;
      break;
    }
  ASSERT_TRUE(s.select(reduce));
  s.scope = StepScope::tile;
  const EventHeader& t = run.headers[reduce];
  const std::vector<size_t> tile = s.scope_events();
  EXPECT_EQ(tile.size(), s.scope_size());
  EXPECT_EQ(tile.size(), 4u + 4u + 1u) << "4 partials, 4 reduce steps, the final output";
  EXPECT_TRUE(s.to_first());
  std::vector<std::pair<int32_t, int32_t>> seen;
  do {
    const EventHeader& h = run.headers[*s.selected()];
    EXPECT_EQ(h.batch, t.batch);
    EXPECT_EQ(h.head, t.head);
    EXPECT_EQ(h.q_tile, t.q_tile);
    seen.push_back({h.stage, h.split});
  } while (s.step(1));
  const std::vector<std::pair<int32_t, int32_t>> want = {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {2, 0},
                                                         {2, 1}, {2, 2}, {2, 3}, {3, -1}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(s.scope_position(), 8u);
  s.select_scope_position(99);
  EXPECT_EQ(run.headers[*s.selected()].stage, static_cast<int32_t>(Stage::final_output));
  EXPECT_FALSE(s.to_last()) << "already there";
  EXPECT_TRUE(s.to_first());
}

TEST(EventStepper, NVisitsEveryFailingEventInOrderAndShiftNTheFirstDivergence) {
  TS_SEEDED(seed);
  const LoadedRun loaded = testing::capture_cpu(testing::splitk_small(Fault::double_count_l), seed);
  const AnalysisReport& report = *loaded.report;
  ASSERT_TRUE(report.first_divergence.found);
  EventStepper s(*loaded.run, report);
  std::vector<size_t> want;
  for (size_t e : s.order())
    if (report.events[e].compared && !report.events[e].passes) want.push_back(e);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(s.num_failing(), want.size());
  std::vector<size_t> visited;
  while (s.next_failing()) visited.push_back(*s.selected());
  EXPECT_EQ(visited, want);
  EXPECT_EQ(s.selected(), want.back()) << "stays on the last failing event";
  // Double-counted sums: the partials are right, so the first failure is in the reduce.
  EXPECT_EQ(loaded.run->headers[want.front()].stage, static_cast<int32_t>(Stage::splitk_reduce));
  EXPECT_TRUE(s.to_first_divergence());
  EXPECT_EQ(s.selected(), static_cast<size_t>(report.first_divergence.event_index));
  EXPECT_EQ(s.selected(), want.front()) << "the first divergence is the first failing event in the kernels' order";

  const LoadedRun clean = testing::capture_cpu(testing::splitk_small(Fault::none), seed);
  EventStepper c(*clean.run, *clean.report);
  EXPECT_EQ(c.num_failing(), 0u);
  EXPECT_FALSE(c.to_first_divergence());
  EXPECT_FALSE(c.next_failing());
  EXPECT_FALSE(c.selected().has_value());
}

TEST(Playback, StepsAtTheChosenRate) {
  Playback p;
  EXPECT_EQ(p.advance(1.0), 0) << "paused";
  p.events_per_second = 4;
  p.play();
  long steps = 0;
  std::vector<long> per_frame;
  for (int frame = 0; frame < 60; ++frame) {  // one second at 60 frames a second
    per_frame.push_back(p.advance(1.0 / 60));
    steps += per_frame.back();
  }
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(*std::max_element(per_frame.begin(), per_frame.end()), 1) << "evenly spread";
  p.events_per_second = 30;
  EXPECT_EQ(p.advance(0.5), 15);
  p.pause();
  EXPECT_EQ(p.advance(10), 0);
  p.events_per_second = 1e9;
  p.play();
  EXPECT_EQ(p.advance(1.0), 240) << "clamped to 240 a second";
  EXPECT_EQ(p.advance(-1.0), 0);
  p.toggle();
  EXPECT_FALSE(p.playing);
  p.events_per_second = 2;
  p.play();
  EXPECT_NEAR(p.seconds_to_next_step(), 0.5, 1e-12);
}

}  // namespace
}  // namespace ts
