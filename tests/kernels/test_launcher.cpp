// The launcher's contract around the kernels: resolved config and tiling, device names,
// progress and cancellation, and a clear error for each kind of bad request.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>

#include "kernels/kernel_registry.h"
#include "kernels/launch_plan.h"
#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

AttentionConfig small(KernelKind k = KernelKind::splitk) {
  AttentionConfig c;
  c.kernel = k;
  c.head_dim = 64;
  c.batch = 1;
  c.heads = 2;
  c.seq_q = 1;
  c.seq_kv = 2000;
  return c;
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Launcher, ResolvesSplitsAndNamesTheDevice) {
  const AttentionConfig c = small();
  LaunchRequest req;
  req.config = c;
  req.backend = Backend::cpu;
  req.cpu_workers = 2;
  const LaunchOutcome out = launch_attention(req, make_random_inputs(c, {.seed = 1}));
  EXPECT_EQ(out.backend, Backend::cpu);
  EXPECT_EQ(out.device, "CPU SIMT (2 workers)");
  EXPECT_GT(out.config.num_splits, 1) << "the heuristic splits a 2-head decode";
  EXPECT_EQ(out.config.num_splits, out.tiling.num_splits);
  EXPECT_EQ(out.tiling, make_tiling(out.config, kCpuNominalSmCount));
  EXPECT_EQ(out.partial_m.size(), size_t(2 * out.config.num_splits));
  EXPECT_GT(out.elapsed_ms, 0.0);
  EXPECT_TRUE(out.events.headers.empty());
}

TEST(Launcher, AutoRunsOnTheCpuWithoutAGpu) {
  std::string why;
  if (gpu_available(&why)) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
  LaunchRequest req;
  req.config = small(KernelKind::fa1);
  req.backend = Backend::auto_;
  EXPECT_EQ(launch_attention(req, make_random_inputs(req.config, {.seed = 2})).backend, Backend::cpu);
  req.backend = Backend::gpu;
  try {
    launch_attention(req, make_random_inputs(req.config, {.seed = 2}));
    ADD_FAILURE() << "the GPU backend ran without a GPU";
  } catch (const LaunchError& e) {
    EXPECT_TRUE(e.reason() == LaunchFailure::no_device || e.reason() == LaunchFailure::not_built);
    const std::string msg = e.what();
    EXPECT_TRUE(msg.rfind("no CUDA device: ", 0) == 0 || msg.find("built without CUDA") != std::string::npos)
        << msg;
  }
}

// A launch's progress reports, each checked to stay within the total and never to go back.
struct ProgressLog {
  uint64_t last_done = 0, total = 0, calls = 0;
  void attach(LaunchRequest& req) {
    req.progress = [this](uint64_t done, uint64_t all) {
      EXPECT_LE(done, all);
      EXPECT_GE(done, last_done);
      last_done = done;
      total = all;
      ++calls;
    };
  }
};

// Cancelling from the progress callback once a block is done stops the run with `cancelled`.
void expect_cancelled_in_the_middle(LaunchRequest req, const AttentionInputs& in) {
  std::atomic<bool> cancel{false};
  req.cancel = &cancel;
  req.progress = [&](uint64_t done, uint64_t) {
    if (done > 0) cancel = true;  // cancel in the middle
  };
  try {
    launch_attention(req, in);
    ADD_FAILURE() << "not cancelled";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.reason(), LaunchFailure::cancelled) << e.what();
  }
}

TEST(Launcher, ReportsProgressUpToTheTotal) {
  LaunchRequest req;
  req.config = small();
  req.config.seq_q = 300;
  req.backend = Backend::cpu;
  ProgressLog log;
  log.attach(req);
  const LaunchOutcome out = launch_attention(req, make_random_inputs(req.config, {.seed = 3}));
  const uint64_t blocks = uint64_t(out.tiling.num_q_tiles) * 2 * (out.tiling.num_splits + 1);
  EXPECT_GT(log.calls, 0u);
  EXPECT_EQ(log.total, blocks);
  EXPECT_EQ(log.last_done, blocks);
}

// A trace of one head runs each traced build of two kernels as both (kernels/kernel_registry.h):
// the progress still only grows and ends at the plan's blocks, and a cancel in the middle stops it.
TEST(Launcher, ReportsProgressUpToTheTotalWhenATracedBuildRunsTwoKernels) {
  for (KernelKind kind : {KernelKind::splitk, KernelKind::fa2, KernelKind::fa1}) {
    SCOPED_TRACE(std::string(to_string(kind)));
    LaunchRequest req;
    req.config = small(kind);
    if (kind == KernelKind::fa2) req.config.dtype = DType::bf16;
    req.config.seq_q = 300;
    req.config.seq_kv = 300;
    req.backend = Backend::cpu;
    req.trace.enabled = true;
    req.trace.filter.head_end = 1;
    ProgressLog log;
    log.attach(req);
    const AttentionInputs in = make_random_inputs(req.config, {.seed = 6});
    const LaunchOutcome out = launch_attention(req, in);
    const LaunchPlan plan = plan_launch(out.config, kCpuNominalSmCount, req.trace);
    ASSERT_GT(plan.kernels.front().recording_blocks, 0u);
    ASSERT_LT(plan.kernels.front().recording_blocks, plan.kernels.front().blocks());
    EXPECT_GT(log.calls, 0u);
    EXPECT_EQ(log.total, plan.total_blocks());
    EXPECT_EQ(log.last_done, plan.total_blocks());
    expect_cancelled_in_the_middle(req, in);
  }
}

TEST(Launcher, CancelledRunsAreDistinguishable) {
  LaunchRequest req;
  req.config = small(KernelKind::fa1);
  req.config.seq_q = 2000;
  req.backend = Backend::cpu;
  req.cpu_workers = 1;
  std::atomic<bool> cancel{true};
  req.cancel = &cancel;
  const AttentionInputs in = make_random_inputs(req.config, {.seed = 4});
  try {
    launch_attention(req, in);
    ADD_FAILURE() << "not cancelled";
  } catch (const LaunchError& e) {
    EXPECT_TRUE(e.cancelled()) << e.what();
  }
  expect_cancelled_in_the_middle(req, in);
}

TEST(Launcher, BadRequestsGetClearErrors) {
  const AttentionConfig c = small();
  const AttentionInputs in = make_random_inputs(c, {.seed = 5});
  LaunchRequest req;
  req.backend = Backend::cpu;
  req.config = c;
  req.config.head_dim = 48;
  EXPECT_NE(error_of([&] { launch_attention(req, in); }).find("head_dim"), std::string::npos);
  EXPECT_THROW(launch_attention(req, in), ConfigError);

  req.config = c;
  req.config.seq_kv = 2001;
  EXPECT_THROW(launch_attention(req, in), InputError);

  req.config = c;
  AttentionInputs bad = in;
  bad.k.set_float(64 * 7 + 3, std::numeric_limits<float>::quiet_NaN());
  EXPECT_NE(error_of([&] { launch_attention(req, bad); }).find("k holds NaN at index [0, 0, 7, 3]"),
            std::string::npos);

  req.config = c;
  req.config.kernel = KernelKind::fa1;
  req.config.fault = Fault::double_count_l;
  EXPECT_THROW(launch_attention(req, in), ConfigError);

  // A trace too large to hold: a clear error before anything runs.
  AttentionConfig big = c;
  big.kernel = KernelKind::fa1;
  big.seq_q = big.seq_kv = 1 << 17;
  big.head_dim = 256;
  TraceRequest huge;
  huge.enabled = true;
  huge.capacity_events = int64_t{1} << 40;
  try {
    plan_launch(big, kCpuNominalSmCount, huge);
    ADD_FAILURE() << "no error for a huge trace";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.reason(), LaunchFailure::too_large);
    EXPECT_NE(std::string(e.what()).find("filters"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ts
