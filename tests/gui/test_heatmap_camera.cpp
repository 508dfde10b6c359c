// Zoom and pan maths: fit, the point under the cursor stays put, limits, panning, revealing.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "app/gui/heatmap_camera.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(HeatmapCamera, FitFillsTheViewOrKeepsCellsSquare) {
  HeatmapCamera cam;
  cam.fit(8192, 128, 600, 400, false);
  EXPECT_DOUBLE_EQ(cam.view_x(0), 0);
  EXPECT_DOUBLE_EQ(cam.view_x(128), 600);
  EXPECT_DOUBLE_EQ(cam.view_y(0), 0);
  EXPECT_NEAR(cam.view_y(8192), 400, 1e-9);

  cam.fit(10, 40, 800, 400, true);
  EXPECT_DOUBLE_EQ(cam.px_per_col, cam.px_per_row);
  EXPECT_DOUBLE_EQ(cam.px_per_col, 20);  // width-bound
  EXPECT_DOUBLE_EQ(cam.view_y(0), 100);  // centred vertically
  EXPECT_DOUBLE_EQ(cam.view_y(10), 300);

  cam.fit(1, 1, 4000, 4000, false);
  EXPECT_DOUBLE_EQ(cam.px_per_col, HeatmapCamera::kMaxPxPerCell) << "a single cell is not blown up without limit";
}

TEST(HeatmapCamera, CellAtIsTheFloorInsideTheArrayAndNothingOutside) {
  HeatmapCamera cam;
  cam.fit(37, 29, 580, 740, false);  // 20 px per cell both ways
  EXPECT_EQ(cam.cell_at(0.5, 0.5, 37, 29), (CellIndex{0, 0}));
  EXPECT_EQ(cam.cell_at(579.5, 739.5, 37, 29), (CellIndex{36, 28}));
  EXPECT_EQ(cam.cell_at(20.0, 39.9, 37, 29), (CellIndex{1, 1}));
  EXPECT_FALSE(cam.cell_at(-0.1, 5, 37, 29));
  EXPECT_FALSE(cam.cell_at(5, 740.0, 37, 29));
}

TEST(HeatmapCamera, ZoomKeepsTheCellUnderTheCursor) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> vx(0, 640), vy(0, 480), steps(-3, 3);
  HeatmapCamera cam;
  cam.fit(8192, 128, 640, 480, false);
  for (int i = 0; i < 500; ++i) {
    const double x = vx(rng), y = vy(rng);
    const double col = cam.col_at(x), row = cam.row_at(y);
    cam.zoom_at(std::pow(1.25, steps(rng)), x, y, 8192, 128, 640, 480);
    ASSERT_NEAR(cam.col_at(x), col, 1e-9 * std::max(1.0, std::abs(col)));
    ASSERT_NEAR(cam.row_at(y), row, 1e-9 * std::max(1.0, std::abs(row)));
    ASSERT_LE(cam.px_per_col, HeatmapCamera::kMaxPxPerCell);
    ASSERT_LE(cam.px_per_row, HeatmapCamera::kMaxPxPerCell);
  }
}

TEST(HeatmapCamera, ZoomLimits) {
  HeatmapCamera cam;
  cam.fit(8192, 128, 640, 480, false);
  const double fit_row = cam.px_per_row;
  for (int i = 0; i < 200; ++i) cam.zoom_at(2.0, 10, 10, 8192, 128, 640, 480);
  // Rows, tiny at fit, can be magnified to the cap even though columns hit it first.
  EXPECT_DOUBLE_EQ(cam.px_per_row, HeatmapCamera::kMaxPxPerCell);
  EXPECT_DOUBLE_EQ(cam.px_per_col, HeatmapCamera::kMaxPxPerCell);
  for (int i = 0; i < 400; ++i) cam.zoom_at(0.5, 10, 10, 8192, 128, 640, 480);
  EXPECT_GE(cam.px_per_row, fit_row / 8 * (1 - 1e-9)) << "zooming out stops at an eighth of fit";
  EXPECT_GT(cam.px_per_col, 0);
  EXPECT_EQ(cam.zoom_at(0.0, 1, 1, 8192, 128, 640, 480), 1.0) << "a nonsense factor is ignored";
}

TEST(HeatmapCamera, PanMovesByPixelsAndKeepInViewStopsItGettingLost) {
  HeatmapCamera cam;
  cam.fit(100, 100, 500, 500, false);  // 5 px per cell
  cam.pan_pixels(50, -25);
  EXPECT_DOUBLE_EQ(cam.view_x(0), 50);
  EXPECT_DOUBLE_EQ(cam.view_y(0), -25);
  cam.pan_pixels(1e6, 1e6);
  cam.keep_in_view(100, 100, 500, 500, 32);
  EXPECT_LE(cam.view_x(0), 500 - 32 + 1e-9);
  EXPECT_LE(cam.view_y(0), 500 - 32 + 1e-9);
  cam.pan_pixels(-1e7, -1e7);
  cam.keep_in_view(100, 100, 500, 500, 32);
  EXPECT_GE(cam.view_x(100), 32 - 1e-9);
  EXPECT_GE(cam.view_y(100), 32 - 1e-9);
}

TEST(HeatmapCamera, RevealBringsACellFullyIntoView) {
  HeatmapCamera cam;
  cam.fit(1000, 1000, 400, 300, false);
  for (int i = 0; i < 10; ++i) cam.zoom_at(1.5, 0, 0, 1000, 1000, 400, 300);  // cells ~17 x 17 px
  for (CellIndex c : {CellIndex{999, 999}, CellIndex{0, 500}, CellIndex{500, 0}, CellIndex{0, 0}}) {
    cam.reveal(c, 400, 300);
    EXPECT_GE(cam.view_x(static_cast<double>(c.col)), -1e-9);
    EXPECT_LE(cam.view_x(static_cast<double>(c.col + 1)), 400 + 1e-9);
    EXPECT_GE(cam.view_y(static_cast<double>(c.row)), -1e-9);
    EXPECT_LE(cam.view_y(static_cast<double>(c.row + 1)), 300 + 1e-9);
  }
  // A cell larger than the view is centred on it.
  for (int i = 0; i < 30; ++i) cam.zoom_at(1.5, 0, 0, 1000, 1000, 400, 300);
  cam.reveal({321, 654}, 400, 300);
  EXPECT_NEAR(cam.view_x(654.5), 200, 1e-6);
  EXPECT_NEAR(cam.view_y(321.5), 150, 1e-6);
}

}  // namespace
}  // namespace ts
