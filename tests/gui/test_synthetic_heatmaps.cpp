// The synthetic heatmaps: reproducible from the seed (the screenshot tests rebuild them), consistent
// (diff = trace - reference), and with the odd cells they promise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "app/gui/synthetic_heatmaps.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(SyntheticHeatmaps, SameSeedSameArraysOtherSeedOtherArrays) {
  TS_SEEDED(seed);
  const SyntheticHeatmaps a = make_synthetic_heatmaps(37, 29, seed), b = make_synthetic_heatmaps(37, 29, seed);
  EXPECT_TRUE(same_bits(a.trace.values, b.trace.values));
  EXPECT_TRUE(same_bits(a.reference.values, b.reference.values));
  const SyntheticHeatmaps c = make_synthetic_heatmaps(37, 29, seed + 1);
  EXPECT_FALSE(same_bits(a.reference.values, c.reference.values));
}

TEST(SyntheticHeatmaps, DiffIsTraceMinusReferenceAndOddCellsAreWhereListed) {
  TS_SEEDED(seed);
  const SyntheticHeatmaps d = make_synthetic_heatmaps(40, 24, seed);
  ASSERT_EQ(d.trace.values.size(), 40u * 24u);
  ASSERT_EQ(d.diff.mask, d.trace.mask);
  size_t masked = 0;
  for (size_t i = 0; i < d.diff.values.size(); ++i) {
    const float want = d.trace.values[i] - d.reference.values[i];
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(d.diff.values[i]));
    else EXPECT_EQ(d.diff.values[i], want) << i;
    EXPECT_TRUE(std::isfinite(d.reference.values[i]));
    masked += d.trace.mask[i];
  }
  EXPECT_GT(masked, 0u);
  EXPECT_EQ(d.nan_cells.size(), 3u);
  EXPECT_EQ(d.pos_inf_cells.size(), 1u);
  EXPECT_EQ(d.neg_inf_cells.size(), 1u);
  const FloatGridView t = d.trace.view();
  for (CellIndex c : d.nan_cells) EXPECT_TRUE(std::isnan(t.at(c.row, c.col)) && !t.masked(c.row, c.col));
  for (CellIndex c : d.pos_inf_cells) EXPECT_EQ(t.at(c.row, c.col), INFINITY);
  for (CellIndex c : d.neg_inf_cells) EXPECT_EQ(t.at(c.row, c.col), -INFINITY);
  // The error grows with the row: the last quarter's mean |diff| beats the first quarter's.
  double first = 0, last = 0;
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t c = 0; c < 24; ++c) {
      const FloatGridView g = d.diff.view();
      if (std::isfinite(g.at(r, c))) first += std::abs(g.at(r, c));
      if (std::isfinite(g.at(30 + r, c))) last += std::abs(g.at(30 + r, c));
    }
  EXPECT_GT(last, 2 * first);
}

TEST(SyntheticHeatmaps, BadSizesAreRefused) {
  EXPECT_THROW(make_synthetic_heatmaps(0, 5, 1), GridShapeError);
  EXPECT_THROW(make_synthetic_heatmaps(5, -1, 1), GridShapeError);
  EXPECT_THROW(make_synthetic_heatmaps(int64_t{1} << 20, int64_t{1} << 20, 1), GridShapeError);
  const SyntheticHeatmaps tiny = make_synthetic_heatmaps(1, 1, 3);
  EXPECT_EQ(tiny.trace.values.size(), 1u);
}

}  // namespace
}  // namespace ts
