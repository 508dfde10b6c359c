// Axis ticks: 1-2-5 steps, far enough apart, inside the range.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "app/model/axis_ticks.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

int64_t mantissa(int64_t step) {
  while (step % 10 == 0) step /= 10;
  return step;
}
bool is_125(int64_t step) { return mantissa(step) == 1 || mantissa(step) == 2 || mantissa(step) == 5; }

TEST(AxisTicks, StepsAreOneTwoFiveAndFarEnoughApart) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> px(0.001, 80.0), spacing(5.0, 120.0);
  std::uniform_int_distribution<int64_t> pos(-50, 100000);
  for (int i = 0; i < 2000; ++i) {
    const double p = px(rng), s = spacing(rng);
    const int64_t step = tick_step(p, s);
    ASSERT_TRUE(is_125(step)) << step;
    ASSERT_TRUE(step == 1 || step * p >= s) << "step " << step << " px " << p << " spacing " << s;
    ASSERT_TRUE(step == 1 || (static_cast<double>(step) / (mantissa(step) == 5 ? 2.5 : 2.0)) * p < s)
        << "the smallest such step: " << step;
    int64_t a = pos(rng), b = pos(rng);
    if (a > b) std::swap(a, b);
    const auto ticks = axis_ticks(a, b, p, s);
    for (size_t k = 0; k < ticks.size(); ++k) {
      ASSERT_GE(ticks[k], a);
      ASSERT_LT(ticks[k], b);
      ASSERT_EQ(ticks[k] % step, 0);
      if (k) {
        ASSERT_EQ(ticks[k] - ticks[k - 1], step);
      }
    }
    if (b - a >= step) {
      ASSERT_FALSE(ticks.empty());
    }
  }
}

TEST(AxisTicks, DegenerateInputsGiveNothingOrUnitSteps) {
  EXPECT_TRUE(axis_ticks(5, 5, 10, 10).empty());
  EXPECT_TRUE(axis_ticks(9, 2, 10, 10).empty());
  EXPECT_EQ(tick_step(0.0, 10), 1);
  EXPECT_EQ(tick_step(std::numeric_limits<double>::infinity(), 10), 1);
  EXPECT_EQ(axis_ticks(0, 4, 100, 10), (std::vector<int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace ts
