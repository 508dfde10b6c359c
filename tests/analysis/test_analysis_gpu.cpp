// The analysis of GPU captures (label gpu; run on a machine with a CUDA device): each fault's
// report names the same stage, first tile and symptom as on the CPU backend, and A/B of the GPU
// against the CPU agrees for correct kernels (event by event: the same tiling) and for a faulty
// one (both wrong the same way).
//
//   build/release/tests/analysis/test_analysis_gpu        (or: ctest --preset gpu -R analysis_gpu)
#include <gtest/gtest.h>

#include "app/model/analysis/ab_compare.h"
#include "app/model/capture/run_capture.h"
#include "kernels/launcher.h"
#include "tests/analysis/launched_run.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::make_config;

RunView capture(const AttentionConfig& c, Backend backend, uint64_t seed) {
  CaptureSpec spec;
  spec.config = c;
  spec.backend = backend;
  spec.inputs = RandomInputSpec{.seed = seed};
  spec.cpu_workers = 2;
  return test::blind(run_capture(spec).view);
}

class AnalysisGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_available(&why)) GTEST_FAIL() << "this test needs a CUDA device: " << why;
  }
};

TEST_F(AnalysisGpu, FaultsReportTheSameOnBothBackends) {
  TS_SEEDED(seed);
  const auto fa1 = KernelKind::fa1, splitk = KernelKind::splitk;
  const AttentionConfig cases[] = {
      make_config(splitk, Fault::double_count_l, DType::bf16, 128, 33, 900, true, 3),
      make_config(splitk, Fault::masked_nan, DType::bf16, 128, 256, 256, true, 4),
      make_config(fa1, Fault::masked_nan, DType::f16, 64, 100, 40, true),
      make_config(splitk, Fault::empty_split, DType::f32, 64, 16, 100, false, 4),
      make_config(splitk, Fault::partial_layout, DType::f32, 64, 40, 600, false, 3),
      make_config(fa1, Fault::per_tile_softmax, DType::bf16, 128, 70, 200, true),
      make_config(fa1, Fault::stale_accumulator, DType::f32, 32, 64, 250, false),
      make_config(splitk, Fault::stale_accumulator, DType::f16, 128, 9, 1000, false, 4),
  };
  for (const AttentionConfig& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.kernel)) + " " + std::string(to_string(c.fault)));
    const AnalysisReport gpu = analyze_run(capture(c, Backend::gpu, seed));
    const AnalysisReport cpu = analyze_run(capture(c, Backend::cpu, seed));
    ASSERT_TRUE(gpu.first_divergence.found) << gpu.symptom.line;
    EXPECT_EQ(event_key(gpu.first_divergence.header), event_key(cpu.first_divergence.header));
    EXPECT_EQ(gpu.first_divergence.missing, cpu.first_divergence.missing);
    EXPECT_EQ(gpu.symptom.kind, cpu.symptom.kind) << "GPU: " << gpu.symptom.line << "\nCPU: " << cpu.symptom.line;
  }
}

TEST_F(AnalysisGpu, GpuAgreesWithCpu) {
  TS_SEEDED(seed);
  const AttentionConfig cases[] = {
      make_config(KernelKind::fa1, Fault::none, DType::f32, 64, 200, 300, true),
      make_config(KernelKind::fa1, Fault::none, DType::bf16, 128, 130, 131, false, 0, 1, 2),
      make_config(KernelKind::splitk, Fault::none, DType::f16, 64, 40, 700, false, 4),
      make_config(KernelKind::splitk, Fault::none, DType::bf16, 128, 1, 4000, false, 8),
  };
  for (const AttentionConfig& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.kernel)) + " " + std::string(to_string(c.dtype)));
    const ABReport r = compare_runs(capture(c, Backend::gpu, seed), capture(c, Backend::cpu, seed));
    EXPECT_TRUE(r.tilings_match);
    EXPECT_EQ(r.compared_at, "every event");
    EXPECT_EQ(r.differing, 0u) << r.symptom.line;
    EXPECT_EQ(r.symptom.kind, "agree") << r.symptom.line;
  }
  // A faulty kernel is wrong the same way on both.
  const AttentionConfig bad = make_config(KernelKind::splitk, Fault::double_count_l, DType::f32, 64, 24, 600, false, 3);
  const ABReport r = compare_runs(capture(bad, Backend::gpu, seed), capture(bad, Backend::cpu, seed));
  EXPECT_EQ(r.differing, 0u) << r.symptom.line;
  EXPECT_EQ(r.symptom.kind, "both_diverge") << r.symptom.line;
}

}  // namespace
}  // namespace ts
