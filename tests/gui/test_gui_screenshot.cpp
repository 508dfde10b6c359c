// The viewer as a person sees it: tilescope-gui renders the synthetic heatmaps (values drawn from a
// fresh seed) in screenshot mode; the test rebuilds the same arrays, decodes the PNG and checks
// every cell's pixel against the CPU colormap (the GPU shader must agree with map_value), the
// special colours where NaN / Inf / masked cells are, that tiling past a small texture limit
// changes nothing, and the error panel and failure modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>
#include <stb_image.h>

#include "app/gui/synthetic_heatmaps.h"
#include "app/model/colormap.h"
#include "app/model/rgba_image.h"
#include "tests/gui/cell_check.h"
#include "tests/gui/gui_process.h"
#include "tests/gui/screenshot_run.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::load_json;
using test::screenshot;
using test::Shot;
using test::view_named;
using test::CellCheck;
using test::check_cells;
using test::scale_of;

// min / max of the finite, unmasked values of several arrays (independent of autofit).
std::pair<float, float> finite_range(std::initializer_list<const FloatGrid*> grids, bool magnitude) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (const FloatGrid* g : grids)
    for (size_t i = 0; i < g->values.size(); ++i) {
      float v = g->values[i];
      if (!std::isfinite(v) || (!g->mask.empty() && g->mask[i])) continue;
      if (magnitude) v = std::abs(v);
      if (magnitude && v == 0) continue;
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
  return {lo, hi};
}

TEST(GuiScreenshot, CellsHaveTheCpuColormapColours) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const int64_t rows = 37, cols = 29;  // odd sizes: no accidental symmetry
  const Shot shot = screenshot(dir, "linear", seed, "37x29");
  const SyntheticHeatmaps demo = make_synthetic_heatmaps(rows, cols, seed);

  // The ranges the viewer chose are the data's: trace and reference share one.
  const auto [lo, hi] = finite_range({&demo.trace, &demo.reference}, false);
  for (const char* name : {"Trace", "Reference"}) {
    const ColorScale s = scale_of(view_named(shot.layout, name));
    EXPECT_EQ(s.min, lo) << name;
    EXPECT_EQ(s.max, hi) << name;
  }
  const auto [dlo, dhi] = finite_range({&demo.diff}, true);
  (void)dlo;
  const ColorScale ds = scale_of(view_named(shot.layout, "Diff (trace - reference)"));
  EXPECT_TRUE(ds.symmetric);
  EXPECT_EQ(ds.max, dhi);

  const CellCheck t = check_cells(shot, view_named(shot.layout, "Trace"), demo.trace, 1e-4);
  const CellCheck r = check_cells(shot, view_named(shot.layout, "Reference"), demo.reference, 1e-4);
  const CellCheck d = check_cells(shot, view_named(shot.layout, "Diff (trace - reference)"), demo.diff, 1e-4);
  EXPECT_EQ(t.cells, static_cast<size_t>(rows * cols));
  EXPECT_EQ(t.nan, demo.nan_cells.size());
  EXPECT_GT(t.nan, 0u) << "the synthetic heatmaps have NaN cells";
  EXPECT_EQ(t.pos_inf, demo.pos_inf_cells.size());
  EXPECT_EQ(t.neg_inf, demo.neg_inf_cells.size());
  EXPECT_GT(t.masked, 0u);
  EXPECT_EQ(d.nan, t.nan) << "NaN carries into the diff";
  EXPECT_EQ(r.nan, 0u);
  EXPECT_LT(t.near_edge + r.near_edge + d.near_edge, 20u);
}

TEST(GuiScreenshot, LogAndSignedLogScalesMatchTheCpu) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const SyntheticHeatmaps demo = make_synthetic_heatmaps(31, 23, seed);
  for (const char* mode : {"log", "signed-log"}) {
    SCOPED_TRACE(mode);
    const Shot shot = screenshot(dir, mode, seed, "31x23", {"--values-scale", mode, "--values-colormap", "glacier"});
    const nlohmann::json& v = view_named(shot.layout, "Trace");
    EXPECT_EQ(v["colormap"], "glacier");
    const ColorScale s = scale_of(v);
    EXPECT_TRUE(s.log);
    EXPECT_EQ(s.symmetric, std::string(mode) == "signed-log");
    // GLSL's log2 may differ from the CPU's by an ulp or so: a wider edge band.
    const CellCheck t = check_cells(shot, v, demo.trace, 5e-3);
    check_cells(shot, view_named(shot.layout, "Reference"), demo.reference, 5e-3);
    EXPECT_GT(t.nan, 0u);
  }
}

TEST(GuiScreenshot, ZoomingReRendersTheCachedPicture) {
  TS_SEEDED(seed);
  test::TempDir dir;
  // Each frame zooms: a stale cached picture would show the previous frame's cells.
  const Shot shot = screenshot(dir, "zoomed", seed, "37x29", {"--animate", "--frames", "6"});
  const SyntheticHeatmaps demo = make_synthetic_heatmaps(37, 29, seed);
  const nlohmann::json& v = view_named(shot.layout, "Trace");
  const CellCheck t = check_cells(shot, v, demo.trace, 1e-4);
  EXPECT_LT(t.cells, static_cast<size_t>(37 * 29)) << "zoomed in: some cells are out of view";
  EXPECT_GT(t.cells, 100u);
  check_cells(shot, view_named(shot.layout, "Diff (trace - reference)"), demo.diff, 1e-4);
}

TEST(GuiScreenshot, TiledTexturesDrawTheSameAsOne) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const Shot whole = screenshot(dir, "whole", seed, "37x29");
  const Shot tiled = screenshot(dir, "tiled", seed, "37x29", {"--max-tile", "7"});
  ASSERT_EQ(whole.image.width, tiled.image.width);
  ASSERT_EQ(whole.image.height, tiled.image.height);
  for (const auto& v : tiled.layout["views"]) {
    EXPECT_EQ(v["tile_side"], 7);
    EXPECT_EQ(v["tiles"], 6 * 5) << "37 x 29 cells in 7 x 7 tiles";
  }
  for (const auto& v : whole.layout["views"]) EXPECT_EQ(v["tiles"], 1);
  size_t compared = 0;
  for (const auto& v : whole.layout["views"]) {
    const int x0 = static_cast<int>(v["image_min"][0].get<double>()), y0 = static_cast<int>(v["image_min"][1].get<double>());
    const int x1 = static_cast<int>(v["image_max"][0].get<double>()), y1 = static_cast<int>(v["image_max"][1].get<double>());
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        ASSERT_EQ(whole.image.at(x, y), tiled.image.at(x, y)) << v["name"] << " pixel (" << x << ", " << y << ")";
        ++compared;
      }
  }
  EXPECT_GT(compared, 100000u);
  // And the tiled run is right on its own (not merely equal to the other).
  const SyntheticHeatmaps demo = make_synthetic_heatmaps(37, 29, seed);
  check_cells(tiled, view_named(tiled.layout, "Trace"), demo.trace, 1e-4);
}

TEST(GuiScreenshot, NaNAndInfStayVisibleWhenZoomedOut) {
  TS_SEEDED(seed);
  test::TempDir dir;
  // 4096 rows in about 600 pixels: seven rows per pixel, so nearest-neighbour alone would
  // usually miss a lone NaN row.
  const Shot shot = screenshot(dir, "tall", seed, "4096x32");
  const SyntheticHeatmaps demo = make_synthetic_heatmaps(4096, 32, seed);
  const nlohmann::json& v = view_named(shot.layout, "Trace");
  ASSERT_LT(v["px_per_cell"][1].get<double>(), 0.25);
  const double ox = v["origin"][0], oy = v["origin"][1], px = v["px_per_cell"][0], py = v["px_per_cell"][1];
  auto pixel = [&](CellIndex c) {
    return shot.image.at(static_cast<int>(std::floor(ox + (c.col + 0.5) * px)), static_cast<int>(std::floor(oy + (c.row + 0.5) * py)));
  };
  const Rgba8 nan = special_color(CellClass::nan), pinf = special_color(CellClass::pos_inf),
              ninf = special_color(CellClass::neg_inf);
  ASSERT_FALSE(demo.nan_cells.empty());
  for (CellIndex c : demo.nan_cells) EXPECT_EQ(pixel(c), nan) << "NaN at row " << c.row << " col " << c.col;
  for (CellIndex c : demo.pos_inf_cells) EXPECT_TRUE(pixel(c) == pinf || pixel(c) == nan) << to_string(pixel(c));
  for (CellIndex c : demo.neg_inf_cells)
    EXPECT_TRUE(pixel(c) == ninf || pixel(c) == pinf || pixel(c) == nan) << to_string(pixel(c));
  // The marks stay small around each odd cell, none elsewhere: a cell wide, and as tall as a
  // pooled block (at least the 3-pixel reach, rounded up to a power of two of rows) plus the
  // reach.
  auto specials_in = [&](const nlohmann::json& view) {
    size_t n = 0;
    for (int y = static_cast<int>(view["image_min"][1].get<double>()); y < view["image_max"][1].get<double>(); ++y)
      for (int x = static_cast<int>(view["image_min"][0].get<double>()); x < view["image_max"][0].get<double>(); ++x) {
        const Rgba8 p = shot.image.at(x, y);
        n += p == nan || p == pinf || p == ninf;
      }
    return n;
  };
  const size_t odd = demo.nan_cells.size() + demo.pos_inf_cells.size() + demo.neg_inf_cells.size();
  const double block_px = std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(3.0 / py)))) * py;
  EXPECT_LE(specials_in(v), static_cast<size_t>(static_cast<double>(odd) * (block_px + 4) * (std::ceil(px) + 1)));
  EXPECT_EQ(specials_in(view_named(shot.layout, "Reference")), 0u);
}

size_t count_pixels(const RgbaImage& img, Rgba8 c) {
  return static_cast<size_t>(std::count(img.pixels.begin(), img.pixels.end(), c));
}

TEST(GuiScreenshot, ErrorsAreShownInTheWindowAndTheViewerCarriesOn) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const Rgba8 panel{52, 24, 26, 255};
  const Shot clean = screenshot(dir, "clean", seed, "16x16");
  EXPECT_EQ(count_pixels(clean.image, panel), 0u);
  // The error is thrown in the middle of drawing the first frame (inside a table, with IDs
  // pushed); the viewer must recover, show it, and draw the next frames normally.
  const Shot failed =
      screenshot(dir, "error", seed, "16x16", {"--inject-error", "trace file 'x.trace.safetensors' is corrupt"});
  EXPECT_GT(count_pixels(failed.image, panel), 20000u) << "the error panel is drawn";
  const SyntheticHeatmaps demo = make_synthetic_heatmaps(16, 16, seed);
  const CellCheck t = check_cells(failed, view_named(failed.layout, "Trace"), demo.trace, 1e-4);
  EXPECT_EQ(t.cells, 256u);
}

TEST(GuiScreenshot, UnwritableScreenshotPathIsAnErrorAndLeavesNothing) {
  test::TempDir dir;
  const auto target = dir.path() / "missing-folder" / "shot.png";
  const test::ProcessResult r = test::run_gui({"--screenshot", target.string(), "--frames", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(target.string()), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(target.parent_path()));
}

TEST(GuiScreenshot, FrameStatsAreRecorded) {
  test::TempDir dir;
  const auto json = dir.path() / "frames.json";
  const test::ProcessResult r =
      test::run_gui({"--frame-stats", json.string(), "--frames", "12", "--size", "800x600", "--synthetic", "64x32"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = load_json(json);
  EXPECT_EQ(j["frames_ms"].size(), 12u);
  EXPECT_EQ(j["summary"]["frames"], 10) << "two warm-up frames left out";
  EXPECT_GT(j["summary"]["median_ms"].get<double>(), 0.0);
  EXPECT_GE(j["summary"]["p99_ms"].get<double>(), j["summary"]["median_ms"].get<double>());
}

}  // namespace
}  // namespace ts
