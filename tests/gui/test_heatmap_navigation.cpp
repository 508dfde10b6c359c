// Linked views' shared state: fitting, picking with clicks and arrow keys, hover hand-over.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "app/gui/heatmap_navigation.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(HeatmapNavigation, FitsOnFirstUseAndNewShapesAndFollowsResizesUntilZoomed) {
  HeatmapNavigation nav;
  nav.prepare(64, 32, 320, 640);
  EXPECT_TRUE(nav.is_fitted());
  EXPECT_DOUBLE_EQ(nav.camera.px_per_col, 10);
  nav.prepare(64, 32, 640, 640);  // window grew: still fitted, so refit
  EXPECT_DOUBLE_EQ(nav.camera.px_per_col, 20);
  nav.zoom(2, 100, 100);
  EXPECT_FALSE(nav.is_fitted());
  const double zoomed = nav.camera.px_per_col;
  nav.prepare(64, 32, 700, 700);  // resized after a zoom: the user's view stays
  EXPECT_DOUBLE_EQ(nav.camera.px_per_col, zoomed);
  nav.prepare(128, 32, 700, 700);  // new shape: fit again
  EXPECT_TRUE(nav.is_fitted());
  nav.pan(5, 5);
  nav.request_fit();
  nav.prepare(128, 32, 700, 700);
  EXPECT_TRUE(nav.is_fitted());
  EXPECT_DOUBLE_EQ(nav.camera.view_x(0), 0);
}

TEST(HeatmapNavigation, ArrowKeysMoveThePickWithinTheArray) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  HeatmapNavigation nav;
  nav.prepare(37, 29, 300, 300);
  nav.move_pick(1, 1);
  EXPECT_EQ(nav.picked, (CellIndex{0, 0})) << "the first key press picks the top-left cell";
  CellIndex expect{0, 0};
  std::uniform_int_distribution<int> d(-9, 9);
  for (int i = 0; i < 1000; ++i) {
    const int dr = d(rng), dc = d(rng);
    nav.move_pick(dr, dc);
    expect.row = std::clamp<int64_t>(expect.row + dr, 0, 36);
    expect.col = std::clamp<int64_t>(expect.col + dc, 0, 28);
    ASSERT_EQ(nav.picked, expect);
  }
}

TEST(HeatmapNavigation, PickedCellStaysVisibleWhenZoomedIn) {
  HeatmapNavigation nav;
  nav.prepare(1000, 100, 400, 400);
  for (int i = 0; i < 20; ++i) nav.zoom(1, 0, 0);
  nav.pick(CellIndex{0, 0});
  for (int i = 0; i < 500; ++i) nav.move_pick(1, 0);
  EXPECT_EQ(nav.picked, (CellIndex{500, 0}));
  EXPECT_GE(nav.camera.view_y(500), 0);
  EXPECT_LE(nav.camera.view_y(501), 400 + 1e-9);
}

TEST(HeatmapNavigation, ClickOutsideKeepsThePickAndNewShapesDropAnOutOfRangePick) {
  HeatmapNavigation nav;
  nav.prepare(10, 10, 100, 100);
  nav.pick(CellIndex{7, 8});
  nav.pick(std::nullopt);
  EXPECT_EQ(nav.picked, (CellIndex{7, 8}));
  nav.prepare(5, 5, 100, 100);
  EXPECT_FALSE(nav.picked);
}

TEST(HeatmapNavigation, HoverIsHandedToTheNextFrame) {
  HeatmapNavigation nav;
  nav.hovered = CellIndex{3, 4};
  nav.begin_frame();
  EXPECT_FALSE(nav.hovered);
  EXPECT_EQ(nav.hover_shown, (CellIndex{3, 4}));
  nav.begin_frame();
  EXPECT_FALSE(nav.hover_shown);
}

TEST(HeatmapNavigation, WorstCellIsTheLargestDifferenceAndNaNComesFirst) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  FloatGrid g{{}, 13, 7, {}};
  for (int i = 0; i < 13 * 7; ++i) g.values.push_back(normal(rng));
  // Independent answer: the index of the largest |x|, by a different walk.
  auto largest = [&] {
    size_t best = 0;
    for (size_t i = 1; i < g.values.size(); ++i)
      if (std::abs(g.values[i]) > std::abs(g.values[best])) best = i;
    return CellIndex{static_cast<int64_t>(best / 7), static_cast<int64_t>(best % 7)};
  };
  EXPECT_EQ(worst_cell(g), largest());
  // An infinity beats any finite value; a NaN beats the infinity, wherever either sits.
  std::uniform_int_distribution<size_t> any(0, g.values.size() - 1);
  const size_t inf_at = any(rng);
  g.values[inf_at] = -INFINITY;
  EXPECT_EQ(worst_cell(g), (CellIndex{static_cast<int64_t>(inf_at / 7), static_cast<int64_t>(inf_at % 7)}));
  size_t nan_at = any(rng);
  while (nan_at == inf_at) nan_at = any(rng);
  g.values[nan_at] = NAN;
  EXPECT_EQ(worst_cell(g), (CellIndex{static_cast<int64_t>(nan_at / 7), static_cast<int64_t>(nan_at % 7)}));
  // Masked cells are not candidates; an all-masked grid has no worst cell.
  g.mask.assign(g.values.size(), 0);
  g.mask[nan_at] = 1;
  g.mask[inf_at] = 1;
  g.values[nan_at] = g.values[inf_at] = 0.0f;
  EXPECT_EQ(worst_cell(g), largest());
  g.mask.assign(g.values.size(), 1);
  EXPECT_FALSE(worst_cell(g).has_value());
}

}  // namespace
}  // namespace ts
