// GPU only: the two backends agree (outputs, partial buffers, and traces event by event, under
// GQA, windows and softcap too; FA-1, FA-2 and Split-K), and the benchmark shapes meet the
// correctness rule on the GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

AttentionConfig cfg(KernelKind k, DType dt, int64_t d, int64_t b, int64_t h, int64_t sq,
                    int64_t skv, bool causal, int64_t splits = 0) {
  AttentionConfig c;
  c.kernel = k;
  c.dtype = dt;
  c.head_dim = d;
  c.batch = b;
  c.heads = h;
  c.seq_q = sq;
  c.seq_kv = skv;
  c.causal = causal;
  c.num_splits = splits_kv(k) ? splits : 0;
  return c;
}

// GQA (heads on heads_kv), a sliding window and a softcap on a config.
AttentionConfig with(AttentionConfig c, int64_t heads_kv, int64_t left, int64_t right, double softcap) {
  c.heads_kv = heads_kv;
  c.window_left = left;
  c.window_right = right;
  c.softcap = softcap;
  return c;
}

TEST(GpuVsCpu, OutputsPartialsAndTracesAgree) {
  const AttentionConfig cases[] = {
      cfg(KernelKind::fa1, DType::f32, 64, 2, 2, 130, 200, true),
      cfg(KernelKind::fa1, DType::bf16, 128, 1, 2, 65, 300, false),
      cfg(KernelKind::fa1, DType::f16, 256, 1, 1, 40, 100, true),
      cfg(KernelKind::splitk, DType::bf16, 128, 2, 2, 1, 3000, false, 5),
      cfg(KernelKind::splitk, DType::f16, 32, 1, 2, 70, 600, true, 3),
      cfg(KernelKind::splitk, DType::f32, 64, 1, 1, 20, 100, true, 4),  // empty splits
      with(cfg(KernelKind::fa1, DType::bf16, 64, 1, 4, 200, 300, true), 2, 70, -1, 30.0),
      with(cfg(KernelKind::fa1, DType::f16, 128, 1, 3, 100, 90, false), 1, 20, 10, 0.0),
      with(cfg(KernelKind::splitk, DType::bf16, 128, 1, 8, 1, 3000, true, 6), 2, 500, 0, 30.0),
      with(cfg(KernelKind::splitk, DType::f32, 64, 1, 2, 40, 300, false, 3), 1, 60, 20, 3.0),
      // FA-2: the CPU's mma emulation against the tensor cores.
      cfg(KernelKind::fa2, DType::bf16, 64, 2, 2, 130, 200, true),
      cfg(KernelKind::fa2, DType::f16, 128, 1, 2, 65, 300, false),
      with(cfg(KernelKind::fa2, DType::bf16, 128, 1, 4, 200, 300, true), 2, 70, -1, 30.0),
      with(cfg(KernelKind::fa2, DType::f16, 64, 1, 3, 100, 90, false), 1, 20, 10, 0.0),
      // Split-K 2: FA-2's partial pass over splits, Split-K's reduce.
      cfg(KernelKind::splitk2, DType::bf16, 64, 2, 2, 200, 500, true, 3),
      cfg(KernelKind::splitk2, DType::f16, 128, 1, 2, 65, 300, false, 8),  // empty splits
      with(cfg(KernelKind::splitk2, DType::bf16, 128, 1, 4, 200, 300, true, 2), 2, 70, -1, 30.0),
  };
  TS_SEEDED(seed);
  for (const AttentionConfig& c : cases) {
    SCOPED_TRACE(test::describe(c));
    // A run on tensor cores (FA-2, Split-K 2, Split-K's 16-bit decode) rounds P to 16 bits, as its
    // stage table declares: a score that differs in its last fp32 bit between the hardware's mma
    // and the emulation's (which sums in k order) can round a weight the other way, 2^-8 of it in
    // bf16; the running O may differ by that much, where fp32 P's states agree closely.
    const double o_tol = kernel_stage_table(c)[0].p_rounded ? 1e-2 : 2e-3;
    // Split-K with its per-kv-tile events: the two backends' running states compare too.
    const test::RunOptions options{.trace = true, .cpu_workers = 0, .tile_events = true};
    const test::Run gpu = test::run_config(c, Backend::gpu, seed, options);
    // Same splits: the CPU mimics an H100's SM count; pin them so other GPUs compare too.
    AttentionConfig pinned = gpu.out.config;
    const test::Run cpu_pinned = test::run_config(pinned, Backend::cpu, seed, options);
    const ReferenceOutput ref = test::reference_of(pinned, gpu.inputs);
    const double bound = test::check_rule(pinned, gpu.inputs, gpu.out, ref).o_naive * 2 + test::rule_floor(c.dtype);
    EXPECT_LE(test::max_abs_error(gpu.out.o.to_double(), cpu_pinned.out.o.to_double()), bound);
    EXPECT_LE(test::max_abs_error(test::to_double(gpu.out.lse), test::to_double(cpu_pinned.out.lse)), 1e-5);
    if (c.kernel == KernelKind::splitk) {
      ASSERT_EQ(gpu.out.partial_o.size(), cpu_pinned.out.partial_o.size());
      for (size_t i = 0; i < gpu.out.partial_m.size(); ++i) {
        const float a = gpu.out.partial_m[i], b = cpu_pinned.out.partial_m[i];
        EXPECT_TRUE(a == b || std::abs(a - b) <= 1e-5f * std::max(1.0f, std::abs(b))) << i;
      }
    }
    const CapturedEvents &g = gpu.out.events, &p = cpu_pinned.out.events;
    ASSERT_EQ(g.size(), p.size());
    EXPECT_EQ(g.missing.size(), p.missing.size());
    const size_t bm = size_t(g.max_rows), d = size_t(g.head_dim);
    for (size_t i = 0; i < g.size(); ++i) {
      const EventHeader &x = g.headers[i], &y = p.headers[i];
      ASSERT_TRUE(test::same_identity(x, y)) << "event " << i << ": " << test::describe(x) << " vs "
                                             << test::describe(y);
      for (int r = 0; r < x.rows; ++r) {
        const float gl = g.l[i * bm + r], pl = p.l[i * bm + r];
        EXPECT_NEAR(gl, pl, 2e-5 * std::max(1.0f, std::abs(pl))) << "event " << i;
        for (size_t col = 0; col < d; ++col) {
          const float go = g.o[(i * bm + r) * d + col], po = p.o[(i * bm + r) * d + col];
          ASSERT_NEAR(go, po, o_tol * std::max(1.0f, std::abs(pl))) << "event " << i << " row " << r;
        }
      }
    }
  }
}

TEST(GpuVsCpu, BenchmarkShapesMeetTheRule) {
  const AttentionConfig cases[] = {
      cfg(KernelKind::splitk, DType::bf16, 128, 8, 32, 1, 32768, false),  // decode
      cfg(KernelKind::fa1, DType::bf16, 64, 1, 4, 2048, 2048, false),     // prefill (fewer heads)
      cfg(KernelKind::fa1, DType::bf16, 64, 1, 4, 2048, 2048, true),
      cfg(KernelKind::fa2, DType::bf16, 64, 4, 16, 2048, 2048, false),   // the FA-2 prefill benchmark
      cfg(KernelKind::fa2, DType::bf16, 128, 1, 4, 2048, 2048, true),
      cfg(KernelKind::splitk2, DType::bf16, 64, 4, 16, 2048, 2048, false, 4),  // the Split-K 2 prefill benchmark
      with(cfg(KernelKind::splitk, DType::bf16, 128, 8, 32, 1, 32768, false), 8, -1, -1, 0.0),  // GQA decode
      with(cfg(KernelKind::splitk, DType::bf16, 128, 8, 32, 1, 32768, true), 8, 4096, 0, 30.0),
  };
  TS_SEEDED(seed);
  for (const AttentionConfig& c : cases) {
    const test::Run gpu = test::run_config(c, Backend::gpu, seed, false);
    const ReferenceOutput ref = test::reference_of(gpu.out.config, gpu.inputs);
    const test::RuleCheck rule = test::check_rule(gpu.out.config, gpu.inputs, gpu.out, ref);
    EXPECT_TRUE(rule.passes()) << test::describe(gpu.out.config) << ": " << rule.describe();
    RecordProperty(test::describe(gpu.out.config), rule.describe());
  }
}

}  // namespace
}  // namespace ts
