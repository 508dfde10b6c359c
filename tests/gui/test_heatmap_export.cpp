// Exporting a view writes what the view shows: its range (not a fresh autofit), colormap,
// axis names; and a view without data is an error, not a crash. No GL needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <stb_image.h>

#include "app/gui/heatmap_export.h"
#include "app/model/analysis/event_comparison.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "instrumentation/trace/file_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(HeatmapExport, UsesTheViewsRangeAndColormap) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  auto grid = std::make_shared<FloatGrid>();
  grid->rows = 9;
  grid->cols = 13;
  grid->values.resize(9 * 13);
  for (float& v : grid->values) v = d(rng);
  HeatmapView view("Diff");
  view.axes = numbered_axes("query row", "split", 64);
  view.set_data(grid);
  HeatmapDisplay display;
  display.colormap = ColormapId::diverging;
  display.scale = {-0.5f, 0.5f, false, 1e-6f, true};  // narrower than the data: clamps

  const HeatmapPngOptions opt = png_options_for(view, display, "diff");
  EXPECT_FALSE(opt.autofit);
  EXPECT_EQ(opt.row_label, "query row");
  EXPECT_EQ(opt.col_label, "split");
  EXPECT_EQ(opt.first_row, 64);

  test::TempDir dir;
  const HeatmapPngLayout L = export_view_png(dir.path() / "d.png", view, display, "diff");
  EXPECT_EQ(L.scale, display.scale);
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load((dir.path() / "d.png").c_str(), &w, &h, &n, 4);
  ASSERT_TRUE(px);
  const ColorMapper mapper(display.colormap, display.scale);
  for (int64_t r = 0; r < 9; ++r)
    for (int64_t c = 0; c < 13; ++c) {
      const int x = L.plot_x + static_cast<int>(c) * L.cell_w + L.cell_w / 2;
      const int y = L.plot_y + static_cast<int>(r) * L.cell_h + L.cell_h / 2;
      Rgba8 got;
      std::memcpy(&got, px + (static_cast<size_t>(y) * w + x) * 4, 4);
      EXPECT_EQ(got, mapper(grid->values[static_cast<size_t>(r * 13 + c)])) << r << "," << c;
    }
  stbi_image_free(px);

  // Key positions as a grid's columns: the PNG numbers columns from 0, so its label says which
  // key each column ends before.
  view.axes.col_label = "keys up to";
  view.axes.col_values = std::vector<int64_t>{69, 199, 299, 511};
  EXPECT_EQ(png_options_for(view, display, "grid").col_label, "keys up to (index 0 = 69, 1 = 199, ..., 3 = 511)");
  view.axes.col_values = std::vector<int64_t>{};
  view.axes.col_label = "all keys";
  EXPECT_EQ(png_options_for(view, display, "grid").col_label, "all keys") << "no numbers to say";
}

TEST(HeatmapExport, AViewWithoutDataOrAnUnwritablePathIsAnError) {
  HeatmapView empty("Trace");
  test::TempDir dir;
  EXPECT_THROW(export_view_png(dir.path() / "x.png", empty, {}, "t"), GridShapeError);
  HeatmapView view("Trace");
  view.set_data(std::make_shared<FloatGrid>(FloatGrid{{1.0f, 2.0f}, 1, 2, {}}));
  EXPECT_THROW(export_view_png(dir.path() / "no" / "x.png", view, {}, "t"), FileWriteError);
}

TEST(HeatmapExport, EventFramesAreEachEventsComparisonNumberedInOrder) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_small(Fault::double_count_l), seed);
  const RunView& run = *loaded.run;
  std::mt19937_64 rng(seed);
  std::vector<size_t> events;
  std::uniform_int_distribution<size_t> any(0, run.recorded_events - 1);
  for (int i = 0; i < 3; ++i) events.push_back(any(rng));
  HeatmapDisplay values;  // Auto: each frame fits its own range
  HeatmapDisplay diff;
  diff.colormap = ColormapId::diverging;
  diff.scale = {-1.0f, 1.0f, false, 1e-6f, true};
  diff.auto_range = false;  // fixed: kept in every frame
  const std::vector<ExportableHeatmap> frames = event_frames(run, *loaded.reference, events, true, values, diff);
  ASSERT_EQ(frames.size(), 3 * events.size());
  for (size_t k = 0; k < events.size(); ++k) {
    const EventComparison cmp = compare_event(run, *loaded.reference, events[k]);
    const std::string prefix = "frame_00" + std::to_string(k) + "_event_" + std::to_string(events[k]) + "_";
    EXPECT_EQ(frames[3 * k].stem, prefix + "trace");
    EXPECT_EQ(frames[3 * k + 1].stem, prefix + "reference");
    EXPECT_EQ(frames[3 * k + 2].stem, prefix + "diff");
    EXPECT_EQ(frames[3 * k].grid->values, cmp.o_norm_trace.values);
    EXPECT_EQ(frames[3 * k + 1].grid->values, cmp.o_norm_reference.values);
    const auto& d = frames[3 * k + 2].grid->values;
    ASSERT_EQ(d.size(), cmp.o_norm_diff.values.size());
    for (size_t i = 0; i < d.size(); ++i)
      EXPECT_TRUE(d[i] == cmp.o_norm_diff.values[i] || (std::isnan(d[i]) && std::isnan(cmp.o_norm_diff.values[i])));
    EXPECT_TRUE(frames[3 * k].png.autofit);
    EXPECT_FALSE(frames[3 * k + 2].png.autofit);
    EXPECT_EQ(frames[3 * k + 2].png.scale, diff.scale);
    EXPECT_EQ(frames[3 * k].png.first_row, cmp.header.q_begin);
  }
  test::TempDir dir;
  const auto written = write_heatmap_exports(dir.path() / "frames", frames, true, false);
  EXPECT_EQ(written.size(), frames.size());
  for (const auto& f : written) EXPECT_TRUE(std::filesystem::exists(f)) << f;
}

}  // namespace
}  // namespace ts
