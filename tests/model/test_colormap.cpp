// The colormap tables: shape, ordering in perceived lightness, ends, and the special colours.
#include <gtest/gtest.h>

#include <set>

#include "app/model/colormap.h"
#include "app/model/float_grid.h"
#include "tests/model/oklab_reference.h"

namespace ts {
namespace {

using test::oklab_lightness;
using test::rgb_distance;

TEST(Colormap, NamesRoundTripAndUnknownNamesAreRefused) {
  EXPECT_GE(all_colormaps().size(), 4u);
  for (ColormapId id : all_colormaps()) EXPECT_EQ(colormap_from_name(colormap_name(id)), id);
  try {
    colormap_from_name("viridis");
    FAIL() << "an unknown name was accepted";
  } catch (const ColorScaleError& e) {
    EXPECT_NE(std::string(e.what()).find("viridis"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("ember"), std::string::npos) << "the message lists the valid names";
  }
}

TEST(Colormap, TablesAreOpaqueAndUseManyDistinctColours) {
  for (ColormapId id : all_colormaps()) {
    std::set<std::tuple<int, int, int>> distinct;
    for (const Rgba8& c : colormap_table(id)) {
      EXPECT_EQ(c.a, 255);
      distinct.insert({c.r, c.g, c.b});
    }
    EXPECT_GE(distinct.size(), 200u) << colormap_name(id);
  }
}

TEST(Colormap, SequentialMapsRiseInPerceivedLightness) {
  for (ColormapId id : {ColormapId::ember, ColormapId::glacier, ColormapId::gray}) {
    SCOPED_TRACE(std::string(colormap_name(id)));
    const ColormapTable& t = colormap_table(id);
    for (size_t i = 0; i + 1 < t.size(); ++i)  // 8-bit rounding may tie neighbours, never reverse them
      ASSERT_GE(oklab_lightness(t[i + 1]), oklab_lightness(t[i]) - 1e-3) << "entry " << i;
    for (size_t i = 0; i + 4 < t.size(); ++i)
      ASSERT_GT(oklab_lightness(t[i + 4]), oklab_lightness(t[i])) << "entry " << i;
    EXPECT_GT(oklab_lightness(t.back()) - oklab_lightness(t.front()), 0.6);
  }
}

TEST(Colormap, GrayRunsFromBlackToWhite) {
  const ColormapTable& t = colormap_table(ColormapId::gray);
  EXPECT_EQ(t.front(), (Rgba8{0, 0, 0, 255}));
  EXPECT_EQ(t.back(), (Rgba8{255, 255, 255, 255}));
  for (const Rgba8& c : t) {
    EXPECT_EQ(c.r, c.g);
    EXPECT_EQ(c.g, c.b);
  }
}

TEST(Colormap, DivergingIsLightInTheMiddleBlueBelowRedAbove) {
  EXPECT_TRUE(colormap_is_diverging(ColormapId::diverging));
  EXPECT_FALSE(colormap_is_diverging(ColormapId::ember));
  const ColormapTable& t = colormap_table(ColormapId::diverging);
  const size_t mid = t.size() / 2;
  EXPECT_GT(oklab_lightness(t[mid]), 0.9);
  for (size_t i = 1; i < mid; ++i) {  // darker away from the middle, on both arms alike
    EXPECT_LE(oklab_lightness(t[mid - i - 1]), oklab_lightness(t[mid - i]) + 1e-3) << i;
    EXPECT_LE(oklab_lightness(t[mid + i]), oklab_lightness(t[mid + i - 1]) + 1e-3) << i;
    EXPECT_NEAR(oklab_lightness(t[mid - i - 1]), oklab_lightness(t[mid + i]), 0.02) << i;
  }
  EXPECT_GT(t.front().b, t.front().r + 100);
  EXPECT_GT(t.back().r, t.back().b + 100);
}

TEST(Colormap, SpecialColoursAreDistinctAndInNoTable) {
  const CellClass specials[] = {CellClass::nan,    CellClass::pos_inf,       CellClass::neg_inf,   CellClass::masked,
                               CellClass::never_written, CellClass::not_traced, CellClass::pending};
  for (CellClass a : specials) {
    EXPECT_EQ(special_color(a).a, 255);
    for (CellClass b : specials)
      if (a != b) {
        EXPECT_GT(rgb_distance(special_color(a), special_color(b)), 100);
      }
    for (ColormapId id : all_colormaps())
      for (const Rgba8& c : colormap_table(id))
        ASSERT_GT(rgb_distance(special_color(a), c), 60)
            << cell_class_name(a) << " is close to " << to_string(c) << " in " << colormap_name(id);
  }
  // The documented colours (the viewer's legend and the README name them).
  EXPECT_EQ(special_color(CellClass::nan), (Rgba8{255, 0, 255, 255}));
}

TEST(Colormap, AbsentCellCodesAreThreeFactsWithThreeNames) {
  // The mask byte says why a cell has no value; the value itself never decides it.
  EXPECT_EQ(classify_cell(0.5f, static_cast<uint8_t>(AbsentCell::masked)), CellClass::masked);
  EXPECT_EQ(classify_cell(0.5f, static_cast<uint8_t>(AbsentCell::never_written)), CellClass::never_written);
  EXPECT_EQ(classify_cell(0.5f, static_cast<uint8_t>(AbsentCell::not_traced)), CellClass::not_traced);
  EXPECT_EQ(classify_cell(std::nanf(""), static_cast<uint8_t>(AbsentCell::not_traced)), CellClass::not_traced);
  EXPECT_EQ(classify_cell(std::nanf(""), 0), CellClass::nan);
  EXPECT_EQ(cell_class_meaning(CellClass::masked), "masked (sees no key)");
  EXPECT_EQ(cell_class_meaning(CellClass::never_written), "never written by the kernel");
  EXPECT_EQ(cell_class_meaning(CellClass::not_traced), "not traced (filtered)");
  // The .npy codes the export documents.
  EXPECT_EQ(absent_cell_npy_value(AbsentCell::masked), -1.0f);
  EXPECT_EQ(absent_cell_npy_value(AbsentCell::never_written), -2.0f);
  EXPECT_EQ(absent_cell_npy_value(AbsentCell::not_traced), -3.0f);
}

TEST(Colormap, ToleranceMapIsCoolBelowItsMiddleAndHotAbove) {
  // Lower half: blue hues (more blue than red); upper half: red to yellow (more red than blue).
  const ColormapTable& t = colormap_table(ColormapId::tolerance);
  for (size_t i = 0; i < kColormapSize / 2; ++i) EXPECT_GT(t[i].b, t[i].r) << i;
  for (size_t i = kColormapSize / 2; i < kColormapSize; ++i) EXPECT_GT(t[i].r, t[i].b) << i;
}

}  // namespace
}  // namespace ts
