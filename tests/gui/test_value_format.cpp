// Printed cell values round-trip exactly, and special cells say what they are.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "app/gui/value_format.h"
#include "app/model/float_grid.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(ValueFormat, FiniteValuesRoundTripExactly) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 100000; ++i) {
    const auto bits = static_cast<uint32_t>(rng());
    const float v = std::bit_cast<float>(bits);
    if (!std::isfinite(v)) continue;
    const std::string s = format_cell_value(v);
    ASSERT_EQ(std::bit_cast<uint32_t>(std::strtof(s.c_str(), nullptr)), bits) << s;
  }
}

TEST(ValueFormat, SpecialCells) {
  EXPECT_EQ(format_cell_value(std::numeric_limits<float>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_cell_value(std::numeric_limits<float>::infinity()), "+Inf");
  EXPECT_EQ(format_cell_value(-std::numeric_limits<float>::infinity()), "-Inf");
  EXPECT_EQ(format_cell_value(0.5f, static_cast<uint8_t>(AbsentCell::masked)), "masked (sees no key)");
  EXPECT_EQ(format_cell_value(0.5f, static_cast<uint8_t>(AbsentCell::never_written)), "never written by the kernel");
  EXPECT_EQ(format_cell_value(0.5f, static_cast<uint8_t>(AbsentCell::not_traced)), "not traced (filtered)");
  EXPECT_EQ(format_short(1234567.0), "1.235e+06");
}

}  // namespace
}  // namespace ts
