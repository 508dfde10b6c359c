// The correct kernels on the backend under test (test_kernels_cpu: CPU, test_kernels_gpu: GPU)
// meet flash-attention's rule against the float64 reference (error <= 2x the naive
// same-precision error + a tiny floor; NaN never passes) on fresh seeded inputs, over a sweep where every value of every axis appears: S in {1, 7, 64, 65, 128, 1000} for
// queries and keys, seq_q != seq_kv, causal and not (with rows that see no key), splits in
// {1, 3, 8, more than the kv tiles, the heuristic's}, every dtype and head dim.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/kernel_sweep.h"
#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

class CorrectKernel : public ::testing::TestWithParam<AttentionConfig> {};

TEST_P(CorrectKernel, MeetsTheRuleAgainstTheReference) {
  const AttentionConfig c = GetParam();
  TS_SEEDED(seed);
  const test::Run run =
      test::run_config(c, test::backend_under_test(), test::case_seed(seed, test::seed_of(c)), false, 2);
  const ReferenceOutput want = test::reference_of(c, run.inputs);
  const test::RuleCheck rule = test::check_rule(c, run.inputs, run.out, want);
  EXPECT_TRUE(rule.passes()) << test::describe(c) << ": " << rule.describe();
  RecordProperty("rule", rule.describe());
  // Rows that see no key: O = 0 and LSE = -inf, exactly.
  for (size_t r = 0; r < want.lse.size(); ++r)
    if (std::isinf(want.lse[r])) {
      EXPECT_TRUE(std::isinf(run.out.lse[r]) && run.out.lse[r] < 0) << "row " << r;
      for (int64_t e = 0; e < c.head_dim; ++e)
        ASSERT_EQ(run.out.o.get_float(int64_t(r) * c.head_dim + e), 0.0f) << "row " << r;
    }
  if (splits_kv(c.kernel)) {
    EXPECT_EQ(run.out.config.num_splits, run.out.tiling.num_splits);
    EXPECT_GE(run.out.tiling.num_splits, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, CorrectKernel, ::testing::ValuesIn(test::correctness_sweep()),
                         [](const auto& info) { return test::case_name(info.param); });

}  // namespace
}  // namespace ts
