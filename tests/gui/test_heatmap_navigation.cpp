// Linked views' shared state: fitting, picking with clicks and arrow keys, hover hand-over.
#include <gtest/gtest.h>

#include <random>

#include "app/gui/heatmap_navigation.h"
#include "tests/model/test_seed.h"

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

}  // namespace
}  // namespace ts
