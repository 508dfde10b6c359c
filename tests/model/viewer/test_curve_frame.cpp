// The curve plots' frame: it holds every plottable point of random series (and nothing else
// decides it), leaves NaN / infinities / non-positive values on a log axis out, and its ticks
// are round values inside the range; the cursor finds the nearest query row.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "app/model/viewer/curve_frame.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(CurveFrame, FramesTheFinitePointsOfRandomSeries) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  for (int trial = 0; trial < 100; ++trial) {
    const bool log = trial % 2;
    std::vector<CurveSeries> series(2);
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    const size_t n = 1 + rng() % 200;
    const double shift = normal(rng) * 100;
    for (CurveSeries& s : series) {
      for (size_t i = 0; i < n; ++i) {
        double y = log ? std::exp(normal(rng) * 5) : shift + normal(rng) * std::exp(normal(rng));
        const int odd = static_cast<int>(rng() % 20);
        if (odd == 0) y = std::numeric_limits<double>::quiet_NaN();
        if (odd == 1) y = std::numeric_limits<double>::infinity();
        if (odd == 2 && log) y = 0;
        if (odd == 3 && log) y = -1;
        s.y.push_back(static_cast<float>(y));
        const double yf = static_cast<float>(y);
        if (std::isfinite(yf) && (!log || yf > 0)) lo = std::min(lo, yf), hi = std::max(hi, yf);
      }
    }
    const double first_x = static_cast<double>(rng() % 1000);
    const CurveFrame f = fit_curve_frame(series, first_x, log);
    SCOPED_TRACE("trial " + std::to_string(trial));
    EXPECT_EQ(f.x0, first_x);
    EXPECT_EQ(f.x1, first_x + static_cast<double>(n > 1 ? n - 1 : 1));
    if (!(lo <= hi)) continue;
    EXPECT_LE(f.y0, lo);
    EXPECT_GE(f.y1, hi);
    EXPECT_LT(f.y0, f.y1);
    if (log) {
      EXPECT_GT(f.y0, 0);
      EXPECT_GT(f.y0, lo / 10.0001) << "no more than a decade of slack";
      EXPECT_LT(f.y1, hi * 10.0001);
      EXPECT_NEAR(std::log10(f.y0), std::round(std::log10(f.y0)), 1e-9) << "whole decades";
    } else if (hi > lo) {
      EXPECT_LT(f.y1 - f.y0, (hi - lo) * 1.2) << "snug";
    }
    for (const CurveSeries& s : series)
      for (float y : s.y)
        if (f.plottable(y)) {
          EXPECT_GE(f.fy(y), -1e-9);
          EXPECT_LE(f.fy(y), 1 + 1e-9);
        }
    const double slack = 1e-6 * (f.y1 - f.y0);
    for (double t : curve_ticks(f.y0, f.y1, log, 6)) {
      EXPECT_GE(t, f.y0 - slack);
      EXPECT_LE(t, f.y1 + slack);
    }
  }
}

TEST(CurveFrame, EmptyFlatAndExtraValues) {
  const std::vector<CurveSeries> none = {{"nan", {std::nanf(""), std::nanf("")}}};
  const CurveFrame e = fit_curve_frame(none, 0, false);
  EXPECT_EQ(e.y0, 0);
  EXPECT_EQ(e.y1, 1);
  const CurveFrame el = fit_curve_frame(none, 0, true);
  EXPECT_EQ(el.y0, 0.1);
  EXPECT_EQ(el.y1, 10);
  const std::vector<CurveSeries> flat = {{"flat", {2.0f, 2.0f, 2.0f}}};
  const CurveFrame f = fit_curve_frame(flat, 10, false);
  EXPECT_LT(f.y0, 2);
  EXPECT_GT(f.y1, 2);
  EXPECT_EQ(f.x1, 12);
  // The tolerance line (1) is in the frame even when every error is below it.
  const std::vector<CurveSeries> small = {{"err", {1e-3f, 2e-2f}}};
  const double one[] = {1.0};
  const CurveFrame t = fit_curve_frame(small, 0, true, one);
  EXPECT_LE(t.y0, 1e-3);
  EXPECT_GE(t.y1, 1.0);
}

TEST(CurveFrame, TicksAreRound) {
  EXPECT_EQ(curve_ticks(0, 10, false, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(curve_ticks(-0.3, 0.3, false, 3), (std::vector<double>{-0.2, 0, 0.2}));
  EXPECT_EQ(curve_ticks(1e-3, 10, true, 8), (std::vector<double>{1e-3, 1e-2, 1e-1, 1, 10}));
  EXPECT_EQ(curve_ticks(1e-8, 1e4, true, 4).size(), 4u) << "every fourth decade";
  EXPECT_TRUE(curve_ticks(1, 1, false, 4).empty());
  EXPECT_TRUE(curve_ticks(0, std::numeric_limits<double>::infinity(), false, 4).empty());
  const std::vector<double> within = curve_ticks(2, 5, true, 4);  // less than a decade: linear
  ASSERT_FALSE(within.empty());
  for (double t : within) EXPECT_TRUE(t >= 2 && t <= 5) << t;
  EXPECT_EQ(format_tick(0), "0");
  EXPECT_EQ(format_tick(2.5), "2.5");
  EXPECT_EQ(format_tick(1.5e-5), "1.5e-05");
  // The ticks of one log axis read alike: powers of ten without a mantissa on both sides of 1e5.
  EXPECT_EQ(format_tick(1e6), "1e+06");
  EXPECT_EQ(format_tick(1e4), "1e+04");
  EXPECT_EQ(format_tick(1e-4), "1e-04");
  EXPECT_EQ(format_tick(-1e6), "-1e+06");
  EXPECT_EQ(format_tick(4.5e6), "4.5e+06");
}

TEST(CurveFrame, NearestRowUnderTheCursor) {
  EXPECT_EQ(nearest_index(103.4, 100, 8), 3u);
  EXPECT_EQ(nearest_index(103.6, 100, 8), 4u);
  EXPECT_EQ(nearest_index(50, 100, 8), 0u);
  EXPECT_EQ(nearest_index(500, 100, 8), 7u);
  EXPECT_FALSE(nearest_index(1, 0, 0).has_value());
  EXPECT_FALSE(nearest_index(std::nan(""), 0, 4).has_value());
}

}  // namespace
}  // namespace ts
