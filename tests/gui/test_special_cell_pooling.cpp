// Max-pooling of NaN / Inf severity (what keeps them visible when zoomed out), against a
// brute-force block scan, and the choice of pooling level.
#include <gtest/gtest.h>

#include <random>

#include "app/gui/special_cell_pooling.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(SpecialCellPooling, SeverityOrdersNaNAboveInfAndIgnoresMasked) {
  EXPECT_GT(special_severity(CellClass::nan), special_severity(CellClass::pos_inf));
  EXPECT_GT(special_severity(CellClass::pos_inf), special_severity(CellClass::neg_inf));
  EXPECT_GT(special_severity(CellClass::neg_inf), 0);
  EXPECT_EQ(special_severity(CellClass::masked), 0);
  EXPECT_EQ(special_severity(CellClass::finite), 0);
  for (CellClass c : {CellClass::nan, CellClass::pos_inf, CellClass::neg_inf})
    EXPECT_EQ(severity_class(special_severity(c)), c);
}

TEST(SpecialCellPooling, MaxPoolMatchesABlockScan) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dim(1, 90);
  std::uniform_int_distribution<int> level(0, 6), sev(0, 3), sparse(0, 40);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t rows = dim(rng), cols = dim(rng);
    const int kx = level(rng), ky = level(rng);
    std::vector<uint8_t> base(static_cast<size_t>(rows * cols));
    for (uint8_t& b : base) b = sparse(rng) == 0 ? static_cast<uint8_t>(sev(rng)) : 0;
    const PooledSeverity p = max_pool_severity(base, rows, cols, kx, ky);
    const int64_t bx = int64_t{1} << kx, by = int64_t{1} << ky;
    ASSERT_EQ(p.rows, (rows + by - 1) / by);
    ASSERT_EQ(p.cols, (cols + bx - 1) / bx);
    for (int64_t pr = 0; pr < p.rows; ++pr)
      for (int64_t pc = 0; pc < p.cols; ++pc) {
        uint8_t want = 0;
        for (int64_t r = pr * by; r < std::min(rows, (pr + 1) * by); ++r)
          for (int64_t c = pc * bx; c < std::min(cols, (pc + 1) * bx); ++c)
            want = std::max(want, base[static_cast<size_t>(r * cols + c)]);
        ASSERT_EQ(p.values[static_cast<size_t>(pr * p.cols + pc)], want) << pr << "," << pc;
      }
  }
}

TEST(SpecialCellPooling, LevelCoversThePixelFootprint) {
  EXPECT_EQ(pooling_level(5.0), 0);
  EXPECT_EQ(pooling_level(1.0), 0);
  EXPECT_EQ(pooling_level(0.5), 1);
  EXPECT_EQ(pooling_level(0.4), 2);
  EXPECT_EQ(pooling_level(1.0 / 15), 4);
  EXPECT_EQ(pooling_level(0.0), 0);
  EXPECT_EQ(pooling_level(1e-30), 30);
  for (double p = 0.001; p < 1; p *= 1.1) EXPECT_GE(std::ldexp(1.0, pooling_level(p)) * p, 1.0 - 1e-12) << p;
}

}  // namespace
}  // namespace ts
