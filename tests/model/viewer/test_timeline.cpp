// The timeline's arithmetic (app/model/viewer/timeline.h), on random runs drawn from the test's
// seed and on a real CPU capture: every timed event is one box on its own SM / worker's lane; a
// block's boxes chain from one event to the next; spans and the straggler are those of the
// events themselves; untimed events are counted, not drawn.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "app/model/viewer/timeline.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

// Two passes (state, then merge), random blocks on random SMs, each block's events at increasing
// random times; a few appended untimed events (time 0), as the final output is.
RunView random_run(std::mt19937_64& rng, size_t& untimed) {
  RunView run;
  run.metadata["backend"] = "gpu";
  run.stages = {{"part", StageKind::state, 0}, {"merge", StageKind::merge, 1}};
  std::uniform_int_distribution<int> sms(0, 7), steps(1, 5), gap(1, 5000), splits(0, 3);
  const uint64_t t0 = 1'700'000'000'000'000'000ull;
  for (int32_t stage = 0; stage < 2; ++stage)
    for (int32_t block = 0; block < 12; ++block) {
      uint64_t t = t0 + static_cast<uint64_t>(stage) * 100000 + static_cast<uint64_t>(gap(rng));
      const int32_t where = sms(rng), split = stage == 0 ? splits(rng) : -1, n = steps(rng);
      for (int32_t k = 0; k < n; ++k) {
        EventHeader h{};
        h.stage = stage;
        h.block = block;
        h.where = where;
        h.split = split;
        h.step = k;
        h.time_ns = t;
        t += static_cast<uint64_t>(gap(rng));
        run.headers.push_back(h);
      }
    }
  std::shuffle(run.headers.begin(), run.headers.end(), rng);  // file order is not time order
  run.recorded_events = run.headers.size();
  untimed = 3;
  for (size_t i = 0; i < untimed; ++i) {
    EventHeader h{};
    h.stage = 1;
    h.where = -1;
    run.headers.push_back(h);  // appended: no time
  }
  return run;
}

TEST(Timeline, EveryTimedEventIsOneBoxChainedWithinItsBlock) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    size_t untimed = 0;
    const RunView run = random_run(rng, untimed);
    const Timeline t = build_timeline(run);
    EXPECT_TRUE(t.gpu);
    EXPECT_EQ(t.untimed_events, untimed);
    ASSERT_EQ(t.boxes.size(), run.recorded_events);
    std::set<size_t> seen;
    std::set<int32_t> wheres;
    uint64_t earliest = UINT64_MAX;
    for (size_t i = 0; i < run.recorded_events; ++i) {
      wheres.insert(run.headers[i].where);
      earliest = std::min(earliest, run.headers[i].time_ns);
    }
    EXPECT_EQ(t.lanes, std::vector<int32_t>(wheres.begin(), wheres.end()));
    EXPECT_EQ(static_cast<uint64_t>(t.origin_ns), earliest);
    // Per block (pass, block): events by time; each box from the previous event to itself.
    std::map<std::pair<int32_t, int32_t>, std::vector<size_t>> blocks;
    for (size_t i = 0; i < run.recorded_events; ++i) blocks[{run.headers[i].stage, run.headers[i].block}].push_back(i);
    std::map<size_t, const TimelineBox*> box_of;
    for (const TimelineBox& b : t.boxes) {
      EXPECT_TRUE(seen.insert(b.event).second) << "event " << b.event << " drawn twice";
      EXPECT_EQ(t.lanes[static_cast<size_t>(b.lane)], run.headers[b.event].where);
      box_of[b.event] = &b;
    }
    for (auto& [key, events] : blocks) {
      std::sort(events.begin(), events.end(), [&](size_t a, size_t b) { return run.headers[a].time_ns < run.headers[b].time_ns; });
      for (size_t k = 0; k < events.size(); ++k) {
        const TimelineBox& b = *box_of.at(events[k]);
        EXPECT_EQ(b.end_ns, static_cast<int64_t>(run.headers[events[k]].time_ns - earliest));
        const uint64_t start = k == 0 ? run.headers[events[k]].time_ns : run.headers[events[k - 1]].time_ns;
        EXPECT_EQ(b.start_ns, static_cast<int64_t>(start - earliest));
      }
    }
    // Spans: per stage and per split, first and last event and the sum of the boxes.
    for (const TimelineSpan& s : t.stages) {
      int64_t first = INT64_MAX, last = INT64_MIN, busy = 0;
      size_t n = 0;
      for (const TimelineBox& b : t.boxes)
        if (run.headers[b.event].stage == s.stage) first = std::min(first, b.end_ns), last = std::max(last, b.end_ns),
                                                   busy += b.end_ns - b.start_ns, ++n;
      EXPECT_EQ(s.first_ns, first);
      EXPECT_EQ(s.last_ns, last);
      EXPECT_EQ(s.busy_ns, busy);
      EXPECT_EQ(s.events, n);
    }
    EXPECT_EQ(t.stages.size(), 2u);
    int32_t want_straggler = -1;
    int64_t latest = INT64_MIN;
    for (const TimelineBox& b : t.boxes)
      if (run.headers[b.event].stage == 0 && b.end_ns > latest) latest = b.end_ns, want_straggler = run.headers[b.event].split;
    EXPECT_EQ(straggler_split(t, 0), want_straggler);
    EXPECT_EQ(straggler_split(t, 1), -1);  // the merge has no splits
  }
}

TEST(Timeline, IdleGapsAreCutNarrowAndTheAxisStaysMonotonic) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    size_t untimed = 0;
    const RunView run = random_run(rng, untimed);
    const Timeline t = build_timeline(run);
    // The two passes are ~100 us apart and each lasts at most ~25 us: one gap between them.
    const TimelineAxis axis = timeline_axis(t, true);
    ASSERT_GE(axis.cuts.size(), 1u);
    EXPECT_LT(axis.length, 0.6 * static_cast<double>(t.end_ns));
    for (const TimelineAxis::Cut& c : axis.cuts) {
      EXPECT_LT(c.shown, static_cast<double>(c.end_ns - c.begin_ns));
      for (const TimelineBox& b : t.boxes)  // no box is open inside a cut
        EXPECT_FALSE(b.start_ns < c.end_ns && b.end_ns > c.begin_ns && b.end_ns > b.start_ns &&
                     std::max(b.start_ns, c.begin_ns) < std::min(b.end_ns, c.end_ns))
            << "box " << b.start_ns << "-" << b.end_ns << " in gap " << c.begin_ns << "-" << c.end_ns;
    }
    std::uniform_real_distribution<double> any(0.0, static_cast<double>(t.end_ns));
    std::vector<double> xs(200);
    for (double& x : xs) x = any(rng);
    std::sort(xs.begin(), xs.end());
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_NEAR(axis.to_ns(axis.to_axis(xs[i])), xs[i], 1e-6 * static_cast<double>(t.end_ns));
      if (i > 0) {
        EXPECT_LE(axis.to_axis(xs[i - 1]), axis.to_axis(xs[i]));
      }
    }
    EXPECT_NEAR(axis.to_axis(static_cast<double>(t.end_ns)), axis.length, 1e-6);
    // Busy time keeps its length: a box is as wide on the axis as in time.
    for (const TimelineBox& b : t.boxes)
      EXPECT_NEAR(axis.to_axis(static_cast<double>(b.end_ns)) - axis.to_axis(static_cast<double>(b.start_ns)),
                  static_cast<double>(b.end_ns - b.start_ns), 1e-6);
    const TimelineAxis plain = timeline_axis(t, false);
    EXPECT_TRUE(plain.cuts.empty());
    EXPECT_EQ(plain.to_axis(1234.0), 1234.0);
  }
}

// time_ns comes from the file: clock readings that are no time of this run (2^63 and 2^63 - 1,
// the ends of int64) are left out as untimed; every other event keeps its box and the spans stay
// those of the real events. They were subtracted in int64 (overflow: the timeline said "over
// 0 ns" and drew nothing).
TEST(Timeline, ClockReadingsFarFromTheRunAreLeftOutAsUntimed) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  size_t untimed = 0;
  RunView run = random_run(rng, untimed);
  const size_t real = run.recorded_events;
  uint64_t earliest = UINT64_MAX, latest = 0;
  for (size_t i = 0; i < real; ++i) {
    earliest = std::min(earliest, run.headers[i].time_ns);
    latest = std::max(latest, run.headers[i].time_ns);
  }
  for (const uint64_t bogus : {uint64_t{1} << 63, (uint64_t{1} << 63) - 1, uint64_t{1}, UINT64_MAX}) {
    EventHeader h = run.headers.front();
    h.time_ns = bogus;
    run.headers.insert(run.headers.begin(), h);
  }
  run.recorded_events = real + 4;
  const Timeline t = build_timeline(run);
  EXPECT_EQ(t.untimed_events, untimed + 4);
  EXPECT_EQ(t.boxes.size(), real);
  EXPECT_EQ(static_cast<uint64_t>(t.origin_ns), earliest);
  EXPECT_EQ(static_cast<uint64_t>(t.end_ns), latest - earliest);
  for (const TimelineBox& b : t.boxes) {
    EXPECT_GE(b.event, 4u) << "a bogus reading was drawn";
    EXPECT_LE(0, b.start_ns);
    EXPECT_LE(b.start_ns, b.end_ns);
  }
  for (const TimelineSpan& s : t.stages) EXPECT_LE(s.busy_ns, t.end_ns * static_cast<int64_t>(s.events));
}

TEST(Timeline, ARunWithoutTimesIsEmptyAndSaysSo) {
  RunView run;
  run.stages = {{"s", StageKind::state, 0}};
  run.headers.resize(4);
  for (EventHeader& h : run.headers) h.stage = 0;
  run.recorded_events = 4;
  const Timeline t = build_timeline(run);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.untimed_events, 4u);
  EXPECT_EQ(t.clock, "CPU steady clock");
}

TEST(Timeline, ACpuCaptureHasItsWorkersAndEveryEvent) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_small(Fault::none), seed);
  const RunView& run = *loaded.run;
  const Timeline t = build_timeline(run);
  ASSERT_FALSE(t.empty());
  EXPECT_FALSE(t.gpu);
  EXPECT_EQ(t.boxes.size() + t.untimed_events, run.num_events());
  for (const TimelineBox& b : t.boxes) {
    EXPECT_GE(run.headers[b.event].where, 0) << "a CPU worker's id";
    EXPECT_LE(b.start_ns, b.end_ns);
  }
  // The partial has a span per split; the reduce starts after the partials' last event.
  EXPECT_FALSE(t.splits.empty());
  EXPECT_GE(t.stages.size(), 2u);
}

TEST(Timeline, DurationsReadInTheirUnit) {
  EXPECT_EQ(format_duration_ns(789), "789 ns");
  EXPECT_EQ(format_duration_ns(12300), "12.3 us");
  EXPECT_EQ(format_duration_ns(4560000), "4.56 ms");
  EXPECT_EQ(format_duration_ns(2000000000), "2 s");
}

}  // namespace
}  // namespace ts
