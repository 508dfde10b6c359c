// The GPU path of the float64 reference (kernels/reference_gpu.h) against the CPU's
// (kernels/reference.h), label gpu: every variant the attention description allows (GQA and
// MQA, both causal alignments, windows, softcap, ALiBi, per-batch lengths with empty batches, a
// custom scale), each dtype, head dims 32 to 256 and odd sizes, row blocks of 1 to 70 rows
// (several of the GPU's 8-row items), boundaries unsorted, repeated and out of range; then the
// whole analysis of a captured run on either device. States agree to 1e-12 relative (the GPU
// sums in another order and has its own exp and tanh; float64 keeps both within ~1e-15).
// Without a device every test is skipped, saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "app/model/analysis/analyze_run.h"
#include "app/model/capture/run_capture.h"
#include "kernels/reference.h"
#include "kernels/reference_gpu.h"
#include "tests/kernels/random_head_inputs.h"

namespace ts {
namespace {

constexpr double kRel = 1e-12;

#define TS_REQUIRE_GPU()                                     \
  do {                                                       \
    std::string reason;                                      \
    if (!gpu_reference_available(&reason)) GTEST_SKIP() << reason; \
  } while (0)

AttentionSpec spec_of(int64_t batch, int64_t hq, int64_t hkv, int64_t sq, int64_t skv, int64_t d, DType dtype) {
  AttentionSpec s;
  s.batch = batch;
  s.heads_q = hq;
  s.heads_kv = hkv;
  s.seq_q = sq;
  s.seq_kv = skv;
  s.head_dim = d;
  s.dtype = dtype;
  return s;
}

struct Case {
  std::string name;
  AttentionSpec spec;
  double input_scale = 1.0;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  auto add = [&](std::string name, AttentionSpec s, double scale = 1.0) {
    validate(s);
    c.push_back({std::move(name), std::move(s), scale});
  };
  add("mha fp32 d32", spec_of(2, 2, 2, 37, 300, 32, DType::f32));
  add("fp16 d256", spec_of(1, 2, 2, 20, 173, 256, DType::f16));
  {
    AttentionSpec s = spec_of(1, 6, 2, 70, 260, 64, DType::bf16);
    s.causal = CausalAlign::bottom_right;
    add("gqa bf16 causal bottom-right", s);
  }
  {
    AttentionSpec s = spec_of(1, 4, 1, 129, 37, 128, DType::f16);
    s.causal = CausalAlign::top_left;
    add("mqa fp16 causal top-left, seq_q > seq_kv", s);
  }
  {
    AttentionSpec s = spec_of(1, 2, 1, 37, 300, 24, DType::f32);
    s.window_left = 16;
    s.window_right = 4;
    s.causal = CausalAlign::bottom_right;
    add("window, causal, odd head dim", s);
  }
  {
    AttentionSpec s = spec_of(1, 2, 2, 37, 129, 64, DType::f32);
    s.softcap = 2.0;
    add("softcap", s, 2.0);
  }
  {
    AttentionSpec s = spec_of(3, 2, 1, 37, 129, 64, DType::bf16);
    s.causal = CausalAlign::bottom_right;
    s.q_lens = {37, 0, 20};
    s.kv_lens = {100, 50, 0};
    add("varlen with empty batches", s);
  }
  {
    AttentionSpec s = spec_of(1, 4, 2, 37, 129, 128, DType::f32);
    s.alibi_slopes = {0.5, 0.125, 0.03125, 1.0 / 128};
    s.causal = CausalAlign::bottom_right;
    add("alibi, causal", s);
  }
  {
    AttentionSpec s = spec_of(2, 4, 2, 37, 129, 64, DType::bf16);
    s.causal = CausalAlign::bottom_right;
    s.window_left = 20;
    s.window_right = 2;
    s.softcap = 3.0;
    s.alibi_slopes = {0.25, 0.0625, 0.5, 0.01};
    s.q_lens = {37, 11};
    s.kv_lens = {129, 60};
    s.scale = 0.2;
    add("everything", s, 2.0);
  }
  return c;
}

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

::testing::AssertionResult near_state(const RefState& gpu, const RefState& cpu) {
  if (gpu.rows != cpu.rows || gpu.head_dim != cpu.head_dim) return ::testing::AssertionFailure() << "shapes differ";
  const size_t d = static_cast<size_t>(cpu.head_dim);
  for (size_t r = 0; r < static_cast<size_t>(cpu.rows); ++r) {
    const double m = cpu.m[r], l = cpu.l[r];
    if (std::isinf(m) || std::isinf(gpu.m[r])) {
      if (gpu.m[r] != m || gpu.l[r] != l)
        return ::testing::AssertionFailure() << "row " << r << ": m " << gpu.m[r] << " vs " << m;
      continue;
    }
    if (std::fabs(gpu.m[r] - m) > kRel * std::max(1.0, std::fabs(m)))
      return ::testing::AssertionFailure() << "row " << r << ": m " << gpu.m[r] << " vs " << m;
    if (std::fabs(gpu.l[r] - l) > kRel * std::fabs(l))
      return ::testing::AssertionFailure() << "row " << r << ": l " << gpu.l[r] << " vs " << l;
    double o_max = 0.0;
    for (size_t c = 0; c < d; ++c) o_max = std::max(o_max, std::fabs(cpu.o[r * d + c]));
    for (size_t c = 0; c < d; ++c)
      if (std::fabs(gpu.o[r * d + c] - cpu.o[r * d + c]) > kRel * o_max + 1e-300)
        return ::testing::AssertionFailure() << "row " << r << ", column " << c << ": O " << gpu.o[r * d + c]
                                             << " vs " << cpu.o[r * d + c];
  }
  return ::testing::AssertionSuccess();
}

TEST(ReferenceGpu, PiecesPrefixesRangesAndOutputMatchTheCpu) {
  TS_REQUIRE_GPU();
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const AttentionSpec& s = c.spec;
    const HeadInputs in = test::random_head_inputs(s, rng(), c.input_scale);
    const ReferenceInputs prepared(s, in, 2);
    const GpuReference gpu(prepared);
    std::vector<RowBlock> blocks;
    std::vector<std::vector<int64_t>> bounds;
    for (int i = 0; i < 12; ++i) {
      RowBlock rb;
      rb.batch = static_cast<int32_t>(uniform(rng, 0, s.batch - 1));
      rb.head = static_cast<int32_t>(uniform(rng, 0, s.heads_q - 1));
      rb.rows = static_cast<int32_t>(uniform(rng, 1, std::min<int64_t>(70, s.seq_q)));
      rb.q_begin = static_cast<int32_t>(uniform(rng, 0, s.seq_q - rb.rows));
      blocks.push_back(rb);
      std::vector<int64_t> b;
      for (int64_t n = uniform(rng, 0, 9); n > 0; --n) b.push_back(uniform(rng, -5, s.seq_kv + 5));
      if (i % 3 == 0) b.push_back(b.empty() ? 1 : b.front());  // a repeat
      bounds.push_back(b);
    }
    const auto on_gpu = gpu.compute(blocks, bounds);
    ASSERT_EQ(on_gpu.size(), blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) {
      SCOPED_TRACE("row block " + std::to_string(i));
      const auto cpu = compute_row_block(prepared, blocks[i], bounds[i]);
      ASSERT_EQ(on_gpu[i]->boundaries(), cpu->boundaries());
      const auto& b = cpu->boundaries();
      for (size_t p = 0; p + 1 < b.size(); ++p) {
        const KeyRange piece{static_cast<int32_t>(b[p]), static_cast<int32_t>(b[p + 1])};
        const KeyRange prefix{0, static_cast<int32_t>(b[p + 1])};
        EXPECT_TRUE(near_state(on_gpu[i]->state(std::span(&piece, 1)), cpu->state(std::span(&piece, 1))));
        EXPECT_TRUE(near_state(on_gpu[i]->state(std::span(&prefix, 1)), cpu->state(std::span(&prefix, 1))));
      }
      const KeyRange off{static_cast<int32_t>(uniform(rng, 0, s.seq_kv)), static_cast<int32_t>(s.seq_kv)};
      EXPECT_TRUE(near_state(on_gpu[i]->state(std::span(&off, 1)), cpu->state(std::span(&off, 1))));
      EXPECT_TRUE(near_state(on_gpu[i]->output(), cpu->output()));
    }
  }
}

TEST(ReferenceGpu, LargeBatchesSplitIntoSeveralLaunchesGiveTheSameStates) {
  TS_REQUIRE_GPU();
  TS_SEEDED(seed);
  // A decode-like set: one row per head, boundaries every 64 keys (a Split-K trace's kv tiles).
  const AttentionSpec s = spec_of(2, 8, 8, 1, 4096, 128, DType::bf16);
  const HeadInputs in = test::random_head_inputs(s, seed);
  const ReferenceInputs prepared(s, in, 2);
  const GpuReference gpu(prepared);
  std::vector<RowBlock> blocks;
  std::vector<std::vector<int64_t>> bounds;
  std::vector<int64_t> every64;
  for (int64_t k = 64; k < s.seq_kv; k += 64) every64.push_back(k);
  for (int32_t b = 0; b < s.batch; ++b)
    for (int32_t h = 0; h < s.heads_q; ++h) {
      blocks.push_back({b, h, 0, 1});
      bounds.push_back(every64);
    }
  const auto on_gpu = gpu.compute(blocks, bounds);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto cpu = compute_row_block(prepared, blocks[i], bounds[i]);
    EXPECT_TRUE(near_state(on_gpu[i]->output(), cpu->output())) << i;
    const KeyRange half{0, 2048};
    EXPECT_TRUE(near_state(on_gpu[i]->state(std::span(&half, 1)), cpu->state(std::span(&half, 1)))) << i;
  }
}

TEST(ReferenceGpu, TheAnalysisGivesTheSameReportOnEitherDevice) {
  TS_REQUIRE_GPU();
  TS_SEEDED(seed);
  CaptureSpec spec;
  spec.config.kernel = KernelKind::splitk;
  spec.config.fault = Fault::double_count_l;
  spec.config.heads = 2;
  spec.config.seq_q = 16;
  spec.config.seq_kv = 1024;
  spec.config.head_dim = 64;
  spec.config.num_splits = 4;
  spec.config.dtype = DType::bf16;
  spec.backend = Backend::cpu;
  spec.inputs = RandomInputSpec{.seed = seed};
  const RunView run = run_capture(spec).view;
  AnalysisOptions cpu_options, gpu_options;
  cpu_options.device = ReferenceDevice::cpu;
  gpu_options.device = ReferenceDevice::gpu;
  const AnalysisReport on_cpu = analyze_run(run, cpu_options), on_gpu = analyze_run(run, gpu_options);
  EXPECT_EQ(on_gpu.verdict, on_cpu.verdict);
  EXPECT_EQ(on_gpu.symptom.kind, on_cpu.symptom.kind) << on_gpu.symptom.line;
  EXPECT_EQ(on_gpu.first_divergence.event_index, on_cpu.first_divergence.event_index);
  ASSERT_EQ(on_gpu.events.size(), on_cpu.events.size());
  for (size_t i = 0; i < on_cpu.events.size(); ++i) EXPECT_EQ(on_gpu.events[i].passes, on_cpu.events[i].passes) << i;
}

}  // namespace
}  // namespace ts
