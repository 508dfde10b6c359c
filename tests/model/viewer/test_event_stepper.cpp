// Stepping through a run's events in the kernel's own order: Split-K's tile states and partials
// before the reduce that reads them, the reduce merging split after split, then the final output
// and the output tensor; a user's stages by their declared passes; [ ] Home End and the slider
// within the run or one row block; N visits every failing event in order; Shift+N lands on the
// analysis's first divergence; playback paces the steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "app/model/viewer/event_stepper.h"
#include "kernels/kernel_stages.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

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

// The kernel's order written out for Split-K from the stages' meaning: every state of the partial
// pass (a split's kv tiles, then its partial) before any reduce; the reduce pass by query tile, its
// steps by split, then the final output; the output tensor's events last.
bool splitk_before(const RunView& run, const EventHeader& a, const EventHeader& b) {
  auto pass = [&](const EventHeader& h) {
    const std::string& name = run.stages[static_cast<size_t>(h.stage)].name;
    return name == "output" ? 2 : name == "splitk.reduce" || name == "final" ? 1 : 0;
  };
  if (pass(a) != pass(b)) return pass(a) < pass(b);
  if (pass(a) == 2) return false;
  if (a.batch != b.batch) return a.batch < b.batch;
  if (a.head != b.head) return a.head < b.head;
  if (a.q_begin != b.q_begin) return a.q_begin < b.q_begin;
  auto within = [&](const EventHeader& h) {
    // Partial pass: split, then the tile states in order, then the partial. Reduce pass: the
    // steps by split, then the final output.
    const std::string& name = run.stages[static_cast<size_t>(h.stage)].name;
    if (pass(h) == 0) return h.split * 1000 + (name == "splitk.partial" ? 999 : h.step);
    return name == "final" ? 1 << 20 : h.split;
  };
  return within(a) < within(b);
}

TEST(EventStepper, SplitKEventsInTheKernelsOrderWhateverTheFileOrder) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_small(Fault::double_count_l), seed);
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
    EXPECT_FALSE(splitk_before(run, b, a)) << "position " << p << ": " << describe_event(b, run.stages, run.attention)
                                           << " after " << describe_event(a, run.stages, run.attention);
  }
  std::vector<size_t> sorted = s.order();
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i) << "each event once";
}

TEST(EventStepper, StepsWithinTheRunOrOneTileAndStopsAtTheEnds) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_small(Fault::double_count_l), seed);
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

  // Row block scope: a reduce event's rows, stepped from its first event to its last — each
  // split's state after its kv tile and its partial, the reduce merging split 0, 1, 2, 3, the
  // final output, and the output tensor's rows (the same row block: the output's events hold as
  // many rows as the trace's events).
  size_t reduce = 0;
  for (size_t e : s.order())
    if (run.headers[e].stage == kSplitkReduceStage && run.headers[e].q_begin == 8) {
      reduce = e;
      break;
    }
  ASSERT_TRUE(s.select(reduce));
  s.scope = StepScope::row_block;
  const EventHeader& t = run.headers[reduce];
  const std::vector<size_t> rows = s.scope_events();
  EXPECT_EQ(rows.size(), s.scope_size());
  EXPECT_EQ(rows.size(), 4u * 2u + 4u + 1u + 1u) << "4 x (tile, partial), 4 reduce steps, final, output";
  EXPECT_TRUE(s.to_first());
  std::vector<std::pair<std::string, int32_t>> seen;
  do {
    const EventHeader& h = run.headers[*s.selected()];
    EXPECT_EQ(h.batch, t.batch);
    EXPECT_EQ(h.head, t.head);
    EXPECT_EQ(h.q_begin, t.q_begin);
    EXPECT_EQ(h.rows, t.rows);
    seen.push_back({run.stages[static_cast<size_t>(h.stage)].name, h.split});
  } while (s.step(1));
  const std::vector<std::pair<std::string, int32_t>> want = {
      {"splitk.tile", 0},    {"splitk.partial", 0}, {"splitk.tile", 1},    {"splitk.partial", 1},
      {"splitk.tile", 2},    {"splitk.partial", 2}, {"splitk.tile", 3},    {"splitk.partial", 3},
      {"splitk.reduce", 0},  {"splitk.reduce", 1},  {"splitk.reduce", 2},  {"splitk.reduce", 3},
      {"final", -1},         {"output", -1}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(s.scope_position(), 13u);
  s.select_scope_position(99);
  EXPECT_EQ(run.stages[static_cast<size_t>(run.headers[*s.selected()].stage)].name, "output");
  EXPECT_FALSE(s.to_last()) << "already there";
  EXPECT_TRUE(s.to_first());
}

TEST(EventStepper, AUsersStagesByTheirPassesAndRowBlocks) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const test::UserStageTrace user = test::write_user_stage_trace(dir.path() / "user.trace.safetensors", seed);
  JobProgress progress;
  const LoadedRun loaded = load_run_file(user.path, progress);
  const RunView& run = *loaded.run;
  EventStepper s(run, *loaded.report);
  ASSERT_EQ(s.num_events(), 2u * 3u * 7u);
  // Every partial (pass 0) before every merge and epilogue (pass 1), though the file holds them
  // per row block; within pass 1, a row block's merges by split, then its epilogue.
  const size_t partials = 2 * 3 * 3;
  for (size_t p = 0; p < s.num_events(); ++p)
    EXPECT_EQ(run.headers[s.order()[p]].stage == test::kUserPartial, p < partials) << p;
  s.select(user.wrong_merge);
  s.scope = StepScope::row_block;
  std::vector<size_t> want;
  for (int32_t split = 0; split < 3; ++split) want.push_back(user.index_of(test::kUserPartial, 1, 16, split));
  for (int32_t split = 0; split < 3; ++split) want.push_back(user.index_of(test::kUserMerge, 1, 16, split));
  want.push_back(user.index_of(test::kUserEpilogue, 1, 16, -1));
  EXPECT_EQ(s.scope_events(), want);
  EXPECT_EQ(s.scope_position(), 4u);
  EXPECT_TRUE(s.step(1));
  EXPECT_EQ(s.selected(), user.index_of(test::kUserMerge, 1, 16, 2));
  EXPECT_TRUE(s.to_first_divergence());
  EXPECT_EQ(s.selected(), user.wrong_merge);
  EXPECT_EQ(s.num_failing(), 1u);
  EXPECT_TRUE(s.to_first());
  EXPECT_EQ(s.selected(), user.index_of(test::kUserPartial, 1, 16, 0));
  EXPECT_TRUE(s.next_failing());
  EXPECT_EQ(s.selected(), user.wrong_merge);
  EXPECT_FALSE(s.next_failing());
}

TEST(EventStepper, NVisitsEveryFailingEventInOrderAndShiftNTheFirstDivergence) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_small(Fault::double_count_l), seed);
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
  EXPECT_EQ(loaded.run->headers[want.front()].stage, kSplitkReduceStage);
  EXPECT_TRUE(s.to_first_divergence());
  EXPECT_EQ(s.selected(), static_cast<size_t>(report.first_divergence.event_index));
  EXPECT_EQ(s.selected(), want.front()) << "the first divergence is the first failing event in the kernels' order";

  const LoadedRun clean = test::capture_cpu(test::splitk_small(Fault::none), seed);
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
