// Colour scales: value -> table index against an independent float64 computation, on random
// values drawn from a fresh seed; autofit ignoring NaN, Inf and masked cells; bad scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "app/model/colormap.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The index a double-precision evaluation of t gives, or -1 when t * 256 lies so close to a
// bin edge that float rounding may legitimately pick either neighbour.
int reference_index(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const double x = t * 256.0;
  if (x > 0 && x < 256 && std::abs(x - std::round(x)) < 1e-3) return -1;
  return std::min(static_cast<int>(x), 255);
}

void expect_index(const ColorMapper& m, float v, double t) {
  const int want = reference_index(t);
  if (want >= 0) {
    ASSERT_EQ(m.lut_index(v), want) << "value " << v << " t " << t;
  }
}

TEST(ColorScale, LinearMatchesFloat64) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 50; ++trial) {
    std::uniform_real_distribution<float> bound(-100.f, 100.f);
    float lo = bound(rng), hi = bound(rng);
    if (lo > hi) std::swap(lo, hi);
    const ColorMapper m(ColormapId::ember, {lo, hi});
    std::uniform_real_distribution<float> value(lo - 10.f, hi + 10.f);
    for (int i = 0; i < 1000; ++i) {
      const float v = value(rng);
      expect_index(m, v, (static_cast<double>(v) - lo) / (static_cast<double>(hi) - lo));
    }
    EXPECT_EQ(m.lut_index(lo), 0);
    EXPECT_EQ(m.lut_index(hi), 255);
    EXPECT_EQ(m.lut_index(lo - 1e30f), 0);
    EXPECT_EQ(m.lut_index(hi + 1e30f), 255);
  }
}

TEST(ColorScale, SymmetricCentresZero) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.01f, 5.f);
  for (int trial = 0; trial < 200; ++trial) {
    const float a = -u(rng), b = u(rng);
    const ColorMapper m(ColormapId::diverging, {a, b, false, 1e-6f, true});
    const double bound = std::max(-static_cast<double>(a), static_cast<double>(b));
    ASSERT_EQ(m.lut_index(0.0f), 128) << "0 sits exactly on the middle entry, bounds " << a << ", " << b;
    ASSERT_EQ(m.lut_index(static_cast<float>(-bound)), 0);
    ASSERT_EQ(m.lut_index(static_cast<float>(bound)), 255);
    std::uniform_real_distribution<float> value(-6.f, 6.f);
    for (int i = 0; i < 200; ++i) {
      const float v = value(rng);
      expect_index(m, v, (v + bound) / (2 * bound));
    }
    ASSERT_EQ(scale_ends({a, b, false, 1e-6f, true}).low, -static_cast<float>(bound));
  }
}

TEST(ColorScale, LogUsesMagnitudeAboveTheFloor) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const ColorScale s{1e-4f, 1e2f, true, 1e-6f, false};
  const ColorMapper m(ColormapId::glacier, s);
  std::uniform_real_distribution<double> exponent(-9.0, 4.0);
  for (int i = 0; i < 5000; ++i) {
    const auto v = static_cast<float>(std::pow(10.0, exponent(rng)));
    const double t = (std::log10(std::max<double>(v, 1e-6)) - std::log10(1e-4)) / (std::log10(1e2) - std::log10(1e-4));
    expect_index(m, v, t);
    EXPECT_EQ(m.lut_index(v), m.lut_index(-v)) << "log of |x|";
  }
  EXPECT_EQ(m.lut_index(0.0f), 0) << "0 clamps to the floor";
}

TEST(ColorScale, SignedLogIsOddAroundZero) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const ColorScale s{-1.0f, 1e3f, true, 1e-3f, true};
  const ColorMapper m(ColormapId::diverging, s);
  EXPECT_EQ(m.lut_index(0.0f), 128);
  EXPECT_EQ(m.lut_index(5e-4f), 128) << "below the floor is zero";
  EXPECT_EQ(m.lut_index(1e3f), 255);
  EXPECT_EQ(m.lut_index(-1e3f), 0);
  std::uniform_real_distribution<double> exponent(-3.0, 3.0);
  for (int i = 0; i < 5000; ++i) {
    const auto v = static_cast<float>(std::pow(10.0, exponent(rng)));
    const double k = std::log10(1e3 / 1e-3);
    const double t = 0.5 + 0.5 * std::log10(std::max(static_cast<double>(v), 1e-3) / 1e-3) / k;
    expect_index(m, v, t);
    expect_index(m, -v, 1.0 - t);
  }
}

TEST(ColorScale, ZeroWidthRangeMapsToTheMiddle) {
  const ColorMapper m(ColormapId::gray, {2.5f, 2.5f});
  EXPECT_EQ(m.lut_index(2.5f), 128);
  EXPECT_EQ(m(2.5f), colormap_table(ColormapId::gray)[128]);
}

TEST(ColorScale, BadScalesAreRefusedWithAReason) {
  EXPECT_THROW(ColorMapper(ColormapId::ember, {kNaN, 1.0f}), ColorScaleError);
  EXPECT_THROW(ColorMapper(ColormapId::ember, {0.0f, kInf}), ColorScaleError);
  EXPECT_THROW(ColorMapper(ColormapId::ember, {0.0f, 1.0f, true, 0.0f, false}), ColorScaleError);
  try {
    ColorMapper(ColormapId::ember, {3.0f, 1.0f});
    FAIL() << "min > max accepted";
  } catch (const ColorScaleError& e) {
    EXPECT_NE(std::string(e.what()).find("black point"), std::string::npos) << e.what();
  }
}

TEST(ColorScale, SpecialCellsGetTheirColoursWhateverTheScale) {
  const ColorMapper m(ColormapId::ember, {-1.0f, 1.0f});
  EXPECT_EQ(m(kNaN), special_color(CellClass::nan));
  EXPECT_EQ(m(kInf), special_color(CellClass::pos_inf));
  EXPECT_EQ(m(-kInf), special_color(CellClass::neg_inf));
  EXPECT_EQ(m(0.25f, true), special_color(CellClass::masked));
  EXPECT_EQ(m(kNaN, true), special_color(CellClass::masked)) << "a masked cell is masked, whatever it holds";
  EXPECT_EQ(m(0.25f), colormap_table(ColormapId::ember)[160]);
  EXPECT_EQ(classify_cell(std::numeric_limits<float>::max()), CellClass::finite);
  EXPECT_EQ(classify_cell(std::numeric_limits<float>::denorm_min()), CellClass::finite);
}

// A random array with NaN, +-Inf and masked cells (holding extreme values) sprinkled in.
struct Sprinkled {
  std::vector<float> values;
  std::vector<uint8_t> mask;
  float min = kInf, max = -kInf, max_abs = 0, min_abs_nonzero = kInf;
  size_t nan = 0, pos_inf = 0, neg_inf = 0, masked = 0;
};

Sprinkled sprinkled(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> value(-3.f, 7.f);
  std::uniform_int_distribution<int> kind(0, 19);
  Sprinkled s;
  s.values.resize(n);
  s.mask.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    switch (kind(rng)) {
      case 0: s.values[i] = kNaN; ++s.nan; break;
      case 1: s.values[i] = kInf; ++s.pos_inf; break;
      case 2: s.values[i] = -kInf; ++s.neg_inf; break;
      case 3: s.values[i] = 1e9f; s.mask[i] = 1; ++s.masked; break;
      default: {
        const float v = value(rng);
        s.values[i] = v;
        s.min = std::min(s.min, v);
        s.max = std::max(s.max, v);
        s.max_abs = std::max(s.max_abs, std::abs(v));
        if (v != 0) s.min_abs_nonzero = std::min(s.min_abs_nonzero, std::abs(v));
      }
    }
  }
  return s;
}

TEST(ColorScale, AutofitIgnoresNaNInfAndMaskedCells) {
  TS_SEEDED(seed);
  const Sprinkled s = sprinkled(seed, 4000);
  ASSERT_GT(s.nan, 0u);
  ASSERT_GT(s.masked, 0u);

  const ColorScale lin = autofit(s.values, {}, s.mask);
  EXPECT_EQ(lin.min, s.min);
  EXPECT_EQ(lin.max, s.max);

  const ColorScale sym = autofit(s.values, {0, 1, false, 1e-6f, true}, s.mask);
  EXPECT_EQ(sym.min, -s.max_abs);
  EXPECT_EQ(sym.max, s.max_abs);
  EXPECT_TRUE(sym.symmetric) << "flags are kept";

  const ColorScale lg = autofit(s.values, {0, 1, true, 1e-6f, false}, s.mask);
  EXPECT_EQ(lg.min, std::max(s.min_abs_nonzero, 1e-6f));
  EXPECT_EQ(lg.max, s.max_abs);
  const ColorScale floored = autofit(s.values, {0, 1, true, 0.5f, false}, s.mask);
  EXPECT_EQ(floored.min, 0.5f) << "the black point does not go below the floor";

  const ValueStats st = value_stats(s.values, s.mask);
  EXPECT_EQ(st.nan, s.nan);
  EXPECT_EQ(st.pos_inf, s.pos_inf);
  EXPECT_EQ(st.neg_inf, s.neg_inf);
  EXPECT_EQ(st.masked, s.masked);
  EXPECT_EQ(st.finite, s.values.size() - s.nan - s.pos_inf - s.neg_inf - s.masked);

  // Without the mask, the masked cells' huge values would win: the mask matters.
  EXPECT_EQ(autofit(s.values).max, 1e9f);
}

TEST(ColorScale, CombinedStatisticsAreThoseOfTheConcatenation) {
  TS_SEEDED(seed);
  const Sprinkled a = sprinkled(seed, 1500), b = sprinkled(seed ^ 0x5555, 2500);
  std::vector<float> both = a.values;
  both.insert(both.end(), b.values.begin(), b.values.end());
  std::vector<uint8_t> mask = a.mask;
  mask.insert(mask.end(), b.mask.begin(), b.mask.end());
  const ValueStats c = combine(value_stats(a.values, a.mask), value_stats(b.values, b.mask));
  const ValueStats w = value_stats(both, mask);
  EXPECT_EQ(c.finite, w.finite);
  EXPECT_EQ(c.nan, w.nan);
  EXPECT_EQ(c.masked, w.masked);
  EXPECT_EQ(c.min, w.min);
  EXPECT_EQ(c.max, w.max);
  EXPECT_EQ(c.max_abs, w.max_abs);
  EXPECT_EQ(c.min_abs_nonzero, w.min_abs_nonzero);
  const std::vector<float> none = {kNaN};
  const ValueStats n = combine(value_stats(none), value_stats(a.values, a.mask));
  EXPECT_EQ(n.min, a.min) << "an array with no finite value adds no extremes";
}

TEST(ColorScale, AutofitOfNothingFiniteIsTheUnitRange) {
  const std::vector<float> v = {kNaN, kInf, -kInf};
  const ColorScale s = autofit(v);
  EXPECT_EQ(s.min, 0.0f);
  EXPECT_EQ(s.max, 1.0f);
  EXPECT_THROW(value_stats(v, std::vector<uint8_t>(2, 0)), ColorScaleError);
}

TEST(ColorScale, ToleranceScaleSplitsAtOneWhateverTheValues) {
  // Error / tolerance on the one fixed scale: any value <= 1 in the lower (cool) half, any value
  // above it in the upper (hot) half, even a hair either side of 1; both halves log.
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const ColorMapper m(kToleranceColormap, tolerance_scale());
  std::uniform_real_distribution<float> exponent(-4.0f, 4.0f);
  for (int i = 0; i < 2000; ++i) {
    const float v = std::pow(10.0f, exponent(rng));
    const int k = m.lut_index(v);
    if (v <= 1.0f) EXPECT_LT(k, 128) << v;
    else EXPECT_GE(k, 128) << v;
    // Within each half, log-linear: 1e-3 -> 0, 1 -> 127/128, 1e3 -> 255.
    const double t = v <= 1.0f ? 0.5 * std::clamp((std::log10(v) + 3.0) / 3.0, 0.0, 1.0)
                               : 0.5 + 0.5 * std::clamp(std::log10(v) / 3.0, 0.0, 1.0);
    EXPECT_NEAR(k, std::min(t * 256.0, v <= 1.0f ? 127.0 : 255.0), 1.01) << v;
  }
  EXPECT_EQ(m.lut_index(1.0f), 127);
  EXPECT_EQ(m.lut_index(std::nextafter(1.0f, 2.0f)), 128);
  EXPECT_EQ(m.lut_index(0.0f), 0);
  EXPECT_EQ(m.lut_index(1e9f), 255);
  // A clean run (all 0.1 x) and a failing one (all 300 x) never share a colour.
  EXPECT_NE(m(0.1f), m(300.0f));
  EXPECT_THROW(ColorMapper(kToleranceColormap, [] {
                 ColorScale s = tolerance_scale();
                 s.symmetric = true;
                 return s;
               }()),
               ColorScaleError);
}

TEST(ColorScale, AutofitOfASplitScaleKeepsBothHalves) {
  ColorScale base = tolerance_scale();
  const std::vector<float> small = {0.01f, 0.02f, 0.05f};
  const ColorScale s = autofit(small, base);
  EXPECT_TRUE(s.split);
  EXPECT_LE(s.min, 0.01f);
  EXPECT_GE(s.max, 10.0f);  // a decade over the threshold, though no value is there
}

}  // namespace
}  // namespace ts
