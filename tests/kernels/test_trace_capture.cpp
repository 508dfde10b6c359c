// The launcher's side of tracing: filters keep exactly what they ask, a full buffer counts
// what it drops exactly and keeps the first events, and events come in the kernels' order.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

AttentionConfig cfg(KernelKind k) {
  AttentionConfig c;
  c.kernel = k;
  c.dtype = DType::f16;
  c.head_dim = 32;
  c.batch = 2;
  c.heads = 3;
  c.seq_q = 150;
  c.seq_kv = 300;
  c.causal = true;
  c.num_splits = k == KernelKind::splitk ? 3 : 0;
  return c;
}

LaunchOutcome traced(const AttentionConfig& c, const AttentionInputs& in, TraceRequest t) {
  LaunchRequest req;
  req.config = c;
  req.backend = test::backend_under_test();
  req.cpu_workers = 2;
  t.enabled = true;
  req.trace = t;
  return launch_attention(req, in);
}

bool same_event(const CapturedEvents& a, size_t i, const CapturedEvents& b, size_t j) {
  const EventHeader &x = a.headers[i], &y = b.headers[j];
  if (x.stage != y.stage || x.batch != y.batch || x.head != y.head || x.q_tile != y.q_tile ||
      x.split != y.split || x.step != y.step || x.kv_tile_begin != y.kv_tile_begin ||
      x.kv_tile_end != y.kv_tile_end || x.rows != y.rows)
    return false;
  const size_t bm = size_t(a.block_m), d = size_t(a.head_dim);
  for (size_t r = 0; r < size_t(x.rows); ++r) {
    if (a.m[i * bm + r] != b.m[j * bm + r] && !(std::isnan(a.m[i * bm + r]) && std::isnan(b.m[j * bm + r])))
      return false;
    for (size_t c = 0; c < d; ++c)
      if (a.o[(i * bm + r) * d + c] != b.o[(j * bm + r) * d + c]) return false;
  }
  return true;
}

TEST(TraceCapture, FiltersKeepExactlyWhatTheyAsk) {
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = cfg(k);
    const AttentionInputs in = make_random_inputs(c, {.seed = 51});
    const LaunchOutcome full = traced(c, in, {});
    ASSERT_EQ(full.events.dropped, 0u);
    ASSERT_EQ(full.events.size(), full.events.requested);

    TraceRequest t;
    t.filter.batch_begin = 1;
    t.filter.batch_end = 2;
    t.filter.head_begin = 1;
    t.filter.head_end = 3;
    t.filter.q_tile_begin = 1;
    t.filter.q_tile_end = 2;
    t.filter.stage_mask = stage_bit(Stage::final_output) |
                          stage_bit(k == KernelKind::fa1 ? Stage::fa1_step : Stage::splitk_partial);
    const LaunchOutcome part = traced(c, in, t);
    // Expected: the full trace's events that pass the filter, in the same order, same payload.
    std::vector<size_t> kept;
    for (size_t i = 0; i < full.events.size(); ++i) {
      const EventHeader& h = full.events.headers[i];
      if (t.filter.keeps(h.batch, h.head, h.q_tile) && t.filter.keeps(static_cast<Stage>(h.stage)))
        kept.push_back(i);
    }
    ASSERT_FALSE(kept.empty());
    ASSERT_EQ(part.events.size(), kept.size()) << to_string(k);
    EXPECT_EQ(part.events.requested, kept.size());
    for (size_t j = 0; j < kept.size(); ++j)
      EXPECT_TRUE(same_event(part.events, j, full.events, kept[j])) << to_string(k) << " event " << j;
    // The filtered run computes the same output.
    EXPECT_EQ(part.o.bytes, full.o.bytes);
  }
}

TEST(TraceCapture, AFullBufferDropsTheRestAndCountsThemExactly) {
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = cfg(k);
    const AttentionInputs in = make_random_inputs(c, {.seed = 52});
    const LaunchOutcome full = traced(c, in, {});
    const size_t n = full.events.size();
    for (int64_t capacity : {int64_t{0}, int64_t{1}, int64_t(n / 2), int64_t(n - 3)}) {
      TraceRequest t;
      t.capacity_events = capacity;
      const LaunchOutcome small = traced(c, in, t);
      ASSERT_EQ(small.events.size(), size_t(capacity));
      EXPECT_EQ(small.events.dropped, n - size_t(capacity)) << "capacity " << capacity;
      EXPECT_EQ(small.events.requested, n);
      for (size_t i = 0; i < size_t(capacity); ++i)
        EXPECT_TRUE(same_event(small.events, i, full.events, i)) << "event " << i;
      EXPECT_EQ(small.o.bytes, full.o.bytes);
    }
  }
}

TEST(TraceCapture, EventsComeInTheKernelsOwnOrderWhateverTheSchedule) {
  if (!test::testing_cpu()) GTEST_SKIP() << "worker counts and schedules are CPU backend options";
  const AttentionConfig c = cfg(KernelKind::fa1);
  const AttentionInputs in = make_random_inputs(c, {.seed = 53});
  LaunchRequest req;
  req.config = c;
  req.backend = test::backend_under_test();
  req.trace.enabled = true;
  req.cpu_workers = 2;
  const LaunchOutcome a = launch_attention(req, in);
  req.cpu_workers = 1;
  req.perturb_seed = 5;
  const LaunchOutcome b = launch_attention(req, in);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_TRUE(same_event(a.events, i, b.events, i)) << i;
    EXPECT_EQ(b.events.headers[i].where, 0) << "one worker";
  }
  // Block order: block indices never decrease along the buffer.
  for (size_t i = 1; i < a.events.size(); ++i)
    EXPECT_LE(a.events.headers[i - 1].block, a.events.headers[i].block);
  // The clock runs forward within a block.
  for (size_t i = 1; i < b.events.size(); ++i)
    if (b.events.headers[i].block == b.events.headers[i - 1].block) {
      EXPECT_LE(b.events.headers[i - 1].time_ns, b.events.headers[i].time_ns);
    }
}

}  // namespace
}  // namespace ts
