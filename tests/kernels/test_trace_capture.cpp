// The launcher's side of tracing: every written event is the one the launch plan placed in its
// slot (the planner and the kernels agree on coordinates, kv head, keys and step, under GQA,
// windows and softcap too); filters are applied
// where events are made and keep exactly what they ask; a full buffer counts what it drops
// exactly and keeps the first events; events come in the kernels' order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <tuple>

#include "kernels/kernel_stages.h"
#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

AttentionConfig cfg(KernelKind k) {
  AttentionConfig c;
  c.kernel = k;
  c.dtype = DType::f16;
  c.head_dim = k == KernelKind::fa2 || k == KernelKind::splitk2 ? 64 : 32;  // FA-2's smallest
  c.batch = 2;
  c.heads = 3;
  c.seq_q = 150;
  c.seq_kv = 300;
  c.causal = true;
  c.num_splits = splits_kv(k) ? 3 : 0;
  return c;
}

LaunchOutcome traced(const AttentionConfig& c, const AttentionInputs& in, TraceRequest t,
                     std::optional<bool> tile_events = std::nullopt) {
  LaunchRequest req;
  req.config = c;
  req.backend = test::backend_under_test();
  req.cpu_workers = 2;
  t.enabled = true;
  req.trace = t;
  req.tile_events = tile_events;
  return launch_attention(req, in);
}

// The same event: identity (where and when aside) and payload, bit for bit over its rows.
bool same_event(const CapturedEvents& a, size_t i, const CapturedEvents& b, size_t j) {
  if (!test::same_identity(a.headers[i], b.headers[j])) return false;
  const size_t ra = size_t(a.max_rows), rb = size_t(b.max_rows), d = size_t(a.head_dim);
  const size_t rows = size_t(a.headers[i].rows);
  return std::memcmp(&a.m[i * ra], &b.m[j * rb], rows * 4) == 0 &&
         std::memcmp(&a.l[i * ra], &b.l[j * rb], rows * 4) == 0 &&
         std::memcmp(&a.o[i * ra * d], &b.o[j * rb * d], rows * d * 4) == 0;
}

// Every written event's header is planned_event() of its slot, and every slot was written.
void expect_events_are_the_planned_ones(const AttentionConfig& c, uint64_t seed, std::optional<bool> tile_events) {
  SCOPED_TRACE(test::describe(c) + (tile_events.value_or(false) ? ", tile events" : ""));
  const test::RunOptions options{.trace = true, .cpu_workers = 2, .tile_events = tile_events};
  const test::Run run = test::run_config(c, test::backend_under_test(), seed, options);
  const CapturedEvents& ev = run.out.events;
  const LaunchPlan plan = test::plan_of(run.out, options);
  EXPECT_TRUE(ev.missing.empty()) << "the kernel wrote every planned event";
  EXPECT_EQ(ev.dropped, 0u);
  ASSERT_EQ(ev.size(), size_t(plan.trace_requested));
  EXPECT_EQ(ev.requested, uint64_t(plan.trace_requested));
  const std::vector<test::SlotOwner> owners = test::slot_owners(plan);
  ASSERT_EQ(owners.size(), ev.size());
  std::vector<int> per_stage(plan.stages.size(), 0);
  for (size_t s = 0; s < owners.size(); ++s) {
    const test::SlotOwner& o = owners[s];
    const EventHeader planned = planned_event(plan, *o.kernel, o.block, o.stage, o.index);
    ASSERT_TRUE(test::same_identity(ev.headers[s], planned))
        << "slot " << s << ": written " << test::describe(ev.headers[s]) << ", planned " << test::describe(planned);
    EXPECT_EQ(o.stage, ev.headers[s].stage);
    ++per_stage[size_t(o.stage)];
  }
  for (size_t st = 0; st < per_stage.size(); ++st) {
    // Every stage the run records shows up (Split-K's tile events only when on).
    const bool optional = splits_kv(c.kernel) && int32_t(st) == kSplitkTileStage && !plan.tile_events;
    if (!optional) {
      EXPECT_GT(per_stage[st], 0) << plan.stages[st].name;
    }
  }
}

TEST(TraceCapture, EveryWrittenEventIsThePlannedEventOfItsSlot) {
  TS_SEEDED(seed);
  for (bool causal : {false, true}) {
    AttentionConfig fa1 = cfg(KernelKind::fa1);
    fa1.causal = causal;
    expect_events_are_the_planned_ones(fa1, test::case_seed(seed, 1), std::nullopt);
    AttentionConfig fa2 = cfg(KernelKind::fa2);
    fa2.causal = causal;
    expect_events_are_the_planned_ones(fa2, test::case_seed(seed, 6), std::nullopt);
    AttentionConfig splitk = cfg(KernelKind::splitk);
    splitk.causal = causal;
    expect_events_are_the_planned_ones(splitk, test::case_seed(seed, 2), true);
    expect_events_are_the_planned_ones(splitk, test::case_seed(seed, 3), false);
    AttentionConfig splitk2 = cfg(KernelKind::splitk2);
    splitk2.causal = causal;
    splitk2.seq_kv = 500;  // 8 kv tiles of 64 keys in 3 splits
    expect_events_are_the_planned_ones(splitk2, test::case_seed(seed, 7), true);
    expect_events_are_the_planned_ones(splitk2, test::case_seed(seed, 8), false);
  }
  // More splits than kv tiles: empty splits' partials (no tile event, keys [seq_kv, seq_kv)).
  AttentionConfig empty = cfg(KernelKind::splitk);
  empty.num_splits = 5;  // 300 keys in tiles of 256: 2 tiles
  expect_events_are_the_planned_ones(empty, test::case_seed(seed, 4), true);
  // Causal with more queries than keys: query tiles that see no key (FA-1: no step at all).
  AttentionConfig tall = cfg(KernelKind::fa1);
  tall.seq_q = 200;
  tall.seq_kv = 70;
  expect_events_are_the_planned_ones(tall, test::case_seed(seed, 5), std::nullopt);
}

TEST(TraceCapture, EveryWrittenEventIsThePlannedEventUnderGqaWindowsAndSoftcap) {
  TS_SEEDED(seed);
  uint64_t salt = 10;
  // 3 query heads on 1 kv head (MQA), 150 queries on 300 keys: windows that skip kv tiles at
  // the start of a query tile's keys (left), at their end (right), both, with and without causal.
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk})
    for (const auto& [left, right, causal] : {std::tuple<int64_t, int64_t, bool>{40, -1, true}, {64, -1, false},
                                             {-1, 10, false}, {30, 5, false}, {100, 0, true}, {0, 0, false}}) {
      AttentionConfig c = cfg(k);
      c.heads_kv = 1;
      c.window_left = left;
      c.window_right = right;
      c.causal = causal;
      c.softcap = 20.0;
      expect_events_are_the_planned_ones(c, test::case_seed(seed, ++salt), true);
      if (k == KernelKind::splitk) expect_events_are_the_planned_ones(c, test::case_seed(seed, ++salt), false);
    }
  // GQA at the decode shape: one query, 8 query heads on 2 kv heads, a left window that leaves
  // the first splits without a visible key, and more splits than the window's tiles.
  AttentionConfig decode = cfg(KernelKind::splitk);
  decode.heads = 8;
  decode.heads_kv = 2;
  decode.seq_q = 1;
  decode.seq_kv = 1500;
  decode.window_left = 200;
  decode.num_splits = 5;
  expect_events_are_the_planned_ones(decode, test::case_seed(seed, ++salt), true);
  // The events say which kv head they read: query head h reads kv head h / 4.
  const test::Run run = test::run_config(decode, test::backend_under_test(), test::case_seed(seed, ++salt),
                                         {.trace = true, .cpu_workers = 2, .tile_events = true});
  std::set<std::pair<int32_t, int32_t>> heads;
  for (const EventHeader& h : run.out.events.headers) heads.insert({h.head, h.kv_head});
  EXPECT_EQ(heads.size(), 8u);
  for (const auto& [head, kv_head] : heads) EXPECT_EQ(kv_head, head / 4) << "query head " << head;
}

TEST(TraceCapture, PlannerAndKernelsAgreeUnderTheMaskedNanFault) {
  TS_SEEDED(seed);
  // The unguarded kernels visit more tiles (Split-K: every tile of its split, past the causal
  // limit): the planner must give those tile events slots too.
  AttentionConfig fa1 = cfg(KernelKind::fa1);
  fa1.fault = Fault::masked_nan;
  fa1.seq_q = 200;  // causal, 80 more queries than keys: rows and whole query tiles see no key
  fa1.seq_kv = 120;
  expect_events_are_the_planned_ones(fa1, test::case_seed(seed, 1), std::nullopt);
  AttentionConfig splitk = cfg(KernelKind::splitk);
  splitk.fault = Fault::masked_nan;
  splitk.seq_q = 200;
  splitk.seq_kv = 200;
  splitk.head_dim = 64;  // 2 kv tiles of 128 keys, one per split: query tile 0 sees none of split 1's
  splitk.num_splits = 2;
  expect_events_are_the_planned_ones(splitk, test::case_seed(seed, 2), true);
  // Under a window the unguarded Split-K visits the split's tiles before the window too; FA-1
  // visits the window's tiles either way, and meets rows whose keys start past its first tile.
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    AttentionConfig windowed = cfg(k);
    windowed.fault = Fault::masked_nan;
    windowed.causal = false;
    windowed.window_left = 50;
    windowed.window_right = 20;
    windowed.head_dim = 64;
    expect_events_are_the_planned_ones(windowed, test::case_seed(seed, 3 + int(k)), true);
  }
  // The planner's count for a faulty Split-K block is more than the correct kernel's.
  AttentionConfig c = cfg(KernelKind::splitk);
  c.seq_q = 200;
  c.seq_kv = 200;
  c.head_dim = 64;
  c.num_splits = 2;
  TraceRequest trace;
  trace.enabled = true;
  const int64_t correct = plan_launch(c, kCpuNominalSmCount, trace, true).trace_requested;
  c.fault = Fault::masked_nan;
  EXPECT_GT(plan_launch(c, kCpuNominalSmCount, trace, true).trace_requested, correct);
}

TEST(TraceCapture, FiltersKeepExactlyWhatTheyAsk) {
  TS_SEEDED(seed);
  // One stage of each kernel left out. FA-2 twice: without its steps its blocks run the kv loop
  // compiled without the step events (fa2_forward.cuh), without its final stage the one with.
  struct Case {
    KernelKind kernel;
    int32_t left_out;
    std::set<int32_t> q_begins;  // of the query tiles that hold rows 70..74
  };
  const Case cases[] = {{KernelKind::fa1, kFa1StepStage, {64}},
                        {KernelKind::splitk, kSplitkReduceStage, {64, 72}},
                        {KernelKind::fa2, kFa2StepStage, {0}},  // 128-row tiles at head dim 64
                        {KernelKind::fa2, kFa2FinalStage, {0}}};
  for (const Case& k : cases) {
    const AttentionConfig c = cfg(k.kernel);
    SCOPED_TRACE(test::describe(c) + ", stage " + std::to_string(k.left_out) + " left out");
    const AttentionInputs in = make_random_inputs(c, {.seed = test::case_seed(seed, int(k.kernel))});
    const LaunchOutcome full = traced(c, in, {}, true);
    ASSERT_EQ(full.events.dropped, 0u);
    ASSERT_EQ(full.events.size(), full.events.requested);

    // Query rows 70..74: inside one FA-1 query tile (64..127), across two Split-K ones (64..71
    // and 72..79).
    const int32_t left_out = k.left_out;
    TraceRequest t;
    t.filter.batch_begin = 1;
    t.filter.batch_end = 2;
    t.filter.head_begin = 1;
    t.filter.head_end = 3;
    t.filter.query_begin = 70;
    t.filter.query_end = 75;
    t.filter.stage_mask = ~(uint64_t{1} << left_out);
    const LaunchOutcome part = traced(c, in, t, true);
    // Expected: the full trace's events that pass the filter, in the same order, same payload.
    std::vector<size_t> kept;
    for (size_t i = 0; i < full.events.size(); ++i) {
      const EventHeader& h = full.events.headers[i];
      if (filter_keeps(t.filter, h.stage, h.batch, h.head, h.q_begin, h.rows)) kept.push_back(i);
    }
    ASSERT_FALSE(kept.empty());
    ASSERT_EQ(part.events.size(), kept.size());
    EXPECT_EQ(part.events.requested, kept.size()) << "the plan counts only what the filters keep";
    EXPECT_TRUE(part.events.missing.empty());
    EXPECT_EQ(part.events.dropped, 0u);
    std::set<int32_t> q_begins, stages;
    for (size_t j = 0; j < kept.size(); ++j) {
      EXPECT_TRUE(same_event(part.events, j, full.events, kept[j])) << "event " << j;
      const EventHeader& h = part.events.headers[j];
      EXPECT_EQ(h.batch, 1);
      EXPECT_GE(h.head, 1);
      EXPECT_LT(h.q_begin, 75);
      EXPECT_GT(h.q_begin + h.rows, 70);
      EXPECT_NE(h.stage, left_out);
      q_begins.insert(h.q_begin);
      stages.insert(h.stage);
    }
    EXPECT_EQ(q_begins, k.q_begins);
    EXPECT_EQ(stages.size(), full.events.stages.size() - 1);
    // The filtered run computes the same output.
    EXPECT_EQ(part.o.bytes, full.o.bytes);
  }
}

TEST(TraceCapture, FiltersSizeTheBufferBeforeAnythingRuns) {
  // Where events are made: the plan gives slots only to kept events, so the buffer of a
  // filtered capture is the filtered size, not the whole run's.
  AttentionConfig c = cfg(KernelKind::splitk);
  TraceRequest all;
  all.enabled = true;
  TraceRequest one_head = all;
  one_head.filter.batch_end = 1;
  one_head.filter.head_end = 1;
  const LaunchPlan full = plan_launch(c, kCpuNominalSmCount, all, true);
  const LaunchPlan part = plan_launch(c, kCpuNominalSmCount, one_head, true);
  EXPECT_EQ(part.trace_requested * c.batch * c.heads, full.trace_requested) << "every head records alike";
  EXPECT_EQ(part.trace_slots, part.trace_requested);
  EXPECT_LT(part.trace_bytes() * 5, full.trace_bytes());
  TraceRequest nothing = all;
  nothing.filter.stage_mask = 0;
  const LaunchPlan none = plan_launch(c, kCpuNominalSmCount, nothing, true);
  EXPECT_EQ(none.trace_requested, 0);
  for (const PlannedKernel& k : none.kernels)
    for (int64_t base : k.slot_base) EXPECT_EQ(base, -1);
}

TEST(TraceCapture, AFullBufferDropsTheRestAndCountsThemExactly) {
  TS_SEEDED(seed);
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = cfg(k);
    const AttentionInputs in = make_random_inputs(c, {.seed = test::case_seed(seed, int(k))});
    const LaunchOutcome full = traced(c, in, {});
    const size_t n = full.events.size();
    for (int64_t capacity : {int64_t{0}, int64_t{1}, int64_t(n / 2), int64_t(n - 3)}) {
      TraceRequest t;
      t.capacity_events = capacity;
      const LaunchOutcome small = traced(c, in, t);
      ASSERT_EQ(small.events.size(), size_t(capacity));
      EXPECT_EQ(small.events.dropped, n - size_t(capacity)) << "capacity " << capacity;
      EXPECT_EQ(small.events.requested, n);
      EXPECT_TRUE(small.events.missing.empty()) << "dropped events are not missing ones";
      for (size_t i = 0; i < size_t(capacity); ++i)
        EXPECT_TRUE(same_event(small.events, i, full.events, i)) << "event " << i;
      EXPECT_EQ(small.o.bytes, full.o.bytes);
    }
  }
}

TEST(TraceCapture, EventsComeInTheKernelsOwnOrderWhateverTheSchedule) {
  if (!test::testing_cpu()) GTEST_SKIP() << "worker counts and schedules are CPU backend options";
  TS_SEEDED(seed);
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = cfg(k);
    const AttentionInputs in = make_random_inputs(c, {.seed = test::case_seed(seed, int(k))});
    LaunchRequest req;
    req.config = c;
    req.backend = test::backend_under_test();
    req.trace.enabled = true;
    req.tile_events = true;
    req.cpu_workers = 2;
    const LaunchOutcome a = launch_attention(req, in);
    req.cpu_workers = 1;
    req.perturb_seed = seed;
    const LaunchOutcome b = launch_attention(req, in);
    ASSERT_EQ(a.events.size(), b.events.size());
    for (size_t i = 0; i < a.events.size(); ++i) {
      EXPECT_TRUE(same_event(a.events, i, b.events, i)) << i;
      EXPECT_EQ(b.events.headers[i].where, 0) << "one worker";
    }
    // Launch order, then block order: pass and block index never decrease along the buffer.
    for (size_t i = 1; i < a.events.size(); ++i) {
      const EventHeader &x = a.events.headers[i - 1], &y = a.events.headers[i];
      const int32_t px = a.events.stages[size_t(x.stage)].pass, py = a.events.stages[size_t(y.stage)].pass;
      EXPECT_TRUE(px < py || (px == py && x.block <= y.block)) << i;
      if (px == py && x.block == y.block) {
        EXPECT_LT(x.step, y.step) << "steps count up within a block";
      }
    }
    // The clock runs forward within a block.
    for (size_t i = 1; i < b.events.size(); ++i) {
      const EventHeader &x = b.events.headers[i - 1], &y = b.events.headers[i];
      if (x.block == y.block && b.events.stages[size_t(x.stage)].pass == b.events.stages[size_t(y.stage)].pass) {
        EXPECT_LE(x.time_ns, y.time_ns) << i;
      }
    }
  }
}

}  // namespace
}  // namespace ts
