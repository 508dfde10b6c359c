// PNG export: write a random heatmap with NaN / +-Inf / masked cells, decode the file with
// stb_image, and check every cell's colour, the colour bar, the size, and the failure modes.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <stb_image.h>

#include "app/model/heatmap_png.h"
#include "app/model/png_file.h"
#include "app/model/png_theme.h"
#include "instrumentation/trace/file_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

RgbaImage load_png(const std::filesystem::path& path) {
  int w = 0, h = 0, channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &w, &h, &channels, 4);
  if (!data) throw std::runtime_error("cannot decode " + path.string());
  RgbaImage img(w, h);
  std::memcpy(img.pixels.data(), data, static_cast<size_t>(w) * h * 4);
  stbi_image_free(data);
  return img;
}

struct Grid {
  int64_t rows, cols;
  std::vector<float> values;
  std::vector<uint8_t> mask;
  FloatGridView view() const { return {values, rows, cols, mask}; }
};

// Random values with a NaN, a +Inf, a -Inf and a masked cell at random distinct places: as many
// of those four, in that order, as leave at least one ordinary value (a 1 x 1 grid gets none, a
// 2 x 2 grid the first three), so that every grid has a finite range to fit.
Grid random_grid(std::mt19937_64& rng, int64_t rows, int64_t cols) {
  Grid g{rows, cols, std::vector<float>(static_cast<size_t>(rows * cols)), std::vector<uint8_t>(static_cast<size_t>(rows * cols))};
  std::normal_distribution<float> value(0.5f, 2.0f);
  for (float& v : g.values) v = value(rng);
  std::vector<size_t> cells(g.values.size());
  std::iota(cells.begin(), cells.end(), size_t{0});
  std::shuffle(cells.begin(), cells.end(), rng);
  const size_t specials = std::min<size_t>(4, cells.size() - 1);
  for (size_t i = 0; i < specials; ++i) {
    if (i < 3) g.values[cells[i]] = std::array{kNaN, kInf, -kInf}[i];
    else g.mask[cells[i]] = 1;
  }
  return g;
}

TEST(HeatmapPng, RandomGridPlantsWhatFitsAndLeavesAnOrdinaryValueWhateverItsSize) {
  // Was: the four special cells were written whatever the size, past the end of a grid of fewer
  // than four cells.
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 2}, {2, 1}, {1, 3}, {2, 2}, {1, 5}, {3, 7}}) {
    const Grid g = random_grid(rng, rows, cols);
    const size_t n = static_cast<size_t>(rows * cols);
    ASSERT_EQ(g.values.size(), n);
    ASSERT_EQ(g.mask.size(), n);
    size_t nans = 0, pos_inf = 0, neg_inf = 0, masked = 0, ordinary = 0;
    for (size_t i = 0; i < n; ++i) {
      const float v = g.values[i];
      nans += std::isnan(v);
      pos_inf += v == kInf;
      neg_inf += v == -kInf;
      masked += g.mask[i] != 0;
      ordinary += std::isfinite(v) && !g.mask[i];
    }
    const size_t specials = std::min<size_t>(4, n - 1);
    const std::string shape = std::to_string(rows) + " x " + std::to_string(cols);
    EXPECT_EQ(nans, specials >= 1 ? 1u : 0u) << shape;
    EXPECT_EQ(pos_inf, specials >= 2 ? 1u : 0u) << shape;
    EXPECT_EQ(neg_inf, specials >= 3 ? 1u : 0u) << shape;
    EXPECT_EQ(masked, specials >= 4 ? 1u : 0u) << shape;
    EXPECT_EQ(ordinary, n - specials) << shape << ": the specials are at distinct cells";
  }
}

TEST(HeatmapPng, EveryCellHasItsColourInTheDecodedFile) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  for (ColormapId cmap : all_colormaps()) {
    SCOPED_TRACE(std::string(colormap_name(cmap)));
    const Grid g = random_grid(rng, 13, 21);  // odd sizes: no accidental symmetry
    HeatmapPngOptions opt;
    opt.title = "trace O, split 3";
    opt.row_label = "query row";
    opt.col_label = "head-dim column";
    opt.colormap = cmap;
    opt.scale.symmetric = colormap_is_diverging(cmap);
    const auto path = dir.path() / (std::string(colormap_name(cmap)) + ".png");
    const HeatmapPngLayout L = write_heatmap_png(path, g.view(), opt);

    const RgbaImage img = load_png(path);
    ASSERT_EQ(img.width, L.width);
    ASSERT_EQ(img.height, L.height);
    ASSERT_GE(L.cell_w * g.cols, opt.min_plot_px) << "small arrays are upscaled";
    ASSERT_GE(L.cell_h * g.rows, opt.min_plot_px);

    // The autofit range is that of the finite, unmasked values.
    float lo = kInf, hi = -kInf;
    for (size_t i = 0; i < g.values.size(); ++i)
      if (std::isfinite(g.values[i]) && !g.mask[i]) lo = std::min(lo, g.values[i]), hi = std::max(hi, g.values[i]);
    if (opt.scale.symmetric) {
      const float m = std::max(-lo, hi);
      lo = -m, hi = m;
    }
    EXPECT_EQ(L.scale.min, lo);
    EXPECT_EQ(L.scale.max, hi);

    const ColorMapper mapper(cmap, L.scale);
    for (int64_t r = 0; r < g.rows; ++r)
      for (int64_t c = 0; c < g.cols; ++c) {
        const float v = g.values[static_cast<size_t>(r * g.cols + c)];
        const bool masked = g.mask[static_cast<size_t>(r * g.cols + c)] != 0;
        // Every pixel of the cell, corners included: cells are whole pixels, no blending.
        for (int dy : {0, L.cell_h - 1})
          for (int dx : {0, L.cell_w / 2, L.cell_w - 1}) {
            const Rgba8 got = img.at(L.plot_x + static_cast<int>(c) * L.cell_w + dx, L.plot_y + static_cast<int>(r) * L.cell_h + dy);
            ASSERT_EQ(got, mapper(v, masked)) << "cell (" << r << ", " << c << ") value " << v;
            // The documented colours, written out: the mapper is not checked against itself.
            const Rgba8 documented = masked ? Rgba8{110, 110, 0, 255}
                                     : std::isnan(v) ? Rgba8{255, 0, 255, 255}
                                     : v == kInf ? Rgba8{0, 255, 0, 255}
                                     : v == -kInf ? Rgba8{0, 255, 255, 255}
                                     : got;
            ASSERT_EQ(got, documented) << "cell (" << r << ", " << c << ")";
          }
      }
    // The colour bar runs from the table's top entry down to its first.
    const ColormapTable& table = colormap_table(cmap);
    EXPECT_EQ(img.at(L.colorbar_x + L.colorbar_w / 2, L.colorbar_y), table[255]);
    EXPECT_EQ(img.at(L.colorbar_x + L.colorbar_w / 2, L.colorbar_y + L.colorbar_h - 1), table[0]);
  }
}

TEST(HeatmapPng, TallArraysGetOnePixelRowsAndKeepEveryNaN) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  Grid g = random_grid(rng, 2048, 16);
  std::uniform_int_distribution<size_t> cell(0, g.values.size() - 1);
  std::vector<size_t> nans;
  for (int i = 0; i < 20; ++i) g.values[nans.emplace_back(cell(rng))] = kNaN;
  HeatmapPngLayout L;
  const RgbaImage img = render_heatmap_image(g.view(), {}, &L);
  EXPECT_EQ(L.cell_h, 1);
  EXPECT_EQ(L.cell_w, 32);
  for (size_t i : nans) {
    const auto r = static_cast<int>(i / 16), c = static_cast<int>(i % 16);
    EXPECT_EQ(img.at(L.plot_x + c * L.cell_w + 3, L.plot_y + r), special_color(CellClass::nan));
  }
}

TEST(HeatmapPng, NoTextOverlapsAnotherThePlotTheColourBarOrItsMarkWhateverTheGridsShape) {
  // Was: a plot shorter than the colour bar (the final output of 3 queries, 3 x 1 cells) put the
  // column label under the plot, where the taller colour bar and its low-end label also were. The
  // colour bar's mark ("1 = tolerance" on the exported error maps) was drawn after the layout,
  // outside this check.
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  struct Box {
    int x0, y0, x1, y1;
  };
  const auto overlap = [](const Box& a, const Box& b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; };
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1},  {3, 1},   {1, 3},  {3, 7},    {7, 3},  {2, 40},
                                                           {40, 2}, {1, 600}, {600, 1}, {64, 64}, {2048, 16}, {5, 2000}};
  for (const auto& [rows, cols] : shapes)
    for (const bool long_labels : {false, true}) {
      const Grid g = random_grid(rng, rows, cols);
      HeatmapPngOptions opt;
      opt.title = long_labels ? "final  O - reference, batch 0 head 1" : "";
      opt.row_label = long_labels ? "query row (index 0 = 4997, 1 = 4998, 2 = 4999)" : "row";
      opt.col_label = long_labels ? "keys up to (index 0 = 5000)" : "c";
      opt.first_row = long_labels ? 4997 : 0;
      // Marked at a random ordinary cell's value, which autofit keeps within the bar.
      std::vector<float> ordinary;
      for (size_t i = 0; i < g.values.size(); ++i)
        if (std::isfinite(g.values[i]) && !g.mask[i]) ordinary.push_back(g.values[i]);
      const float marked = ordinary[std::uniform_int_distribution<size_t>(0, ordinary.size() - 1)(rng)];
      opt.colorbar_mark = HeatmapPngOptions::ColorbarMark{marked, long_labels ? "1 = tolerance" : "m"};
      HeatmapPngLayout L;
      const RgbaImage img = render_heatmap_image(g.view(), opt, &L);
      const std::string shape = std::to_string(rows) + " x " + std::to_string(cols) + (long_labels ? " long" : "");
      const Box plot{L.plot_x - 1, L.plot_y - 1, L.plot_x + static_cast<int>(cols) * L.cell_w + 1,
                     L.plot_y + static_cast<int>(rows) * L.cell_h + 1};
      const Box bar{L.colorbar_x, L.colorbar_y, L.colorbar_x + L.colorbar_w, L.colorbar_y + L.colorbar_h};
      EXPECT_FALSE(overlap(plot, bar)) << shape;
      ASSERT_TRUE(L.colorbar_mark.has_value()) << shape;
      const Box mark{L.colorbar_mark->x0, L.colorbar_mark->y0, L.colorbar_mark->x1, L.colorbar_mark->y1};
      EXPECT_FALSE(overlap(mark, plot)) << shape;
      EXPECT_TRUE(mark.x0 < bar.x0 && mark.x1 > bar.x1) << shape << ": the mark crosses the bar";
      EXPECT_TRUE(L.colorbar_mark->row >= bar.y0 && L.colorbar_mark->row < bar.y1) << shape;
      // scale line, ticks, both labels, the bar's three, the mark's
      ASSERT_GE(L.texts.size(), 7u) << shape;
      EXPECT_EQ(std::count_if(L.texts.begin(), L.texts.end(), [&](const auto& t) { return t.text == opt.colorbar_mark->label; }),
                1)
          << shape << ": the mark's label is laid out with the other texts";
      for (size_t i = 0; i < L.texts.size(); ++i) {
        const HeatmapPngLayout::TextBox& t = L.texts[i];
        const Box a{t.x0, t.y0, t.x1, t.y1};
        EXPECT_TRUE(t.x0 >= 0 && t.y0 >= 0 && t.x1 <= img.width && t.y1 <= img.height) << shape << ": '" << t.text << "'";
        EXPECT_FALSE(overlap(a, plot)) << shape << ": '" << t.text << "' on the plot";
        EXPECT_FALSE(overlap(a, bar)) << shape << ": '" << t.text << "' on the colour bar";
        EXPECT_FALSE(overlap(a, mark)) << shape << ": '" << t.text << "' on the colour bar's mark";
        for (size_t j = i + 1; j < L.texts.size(); ++j) {
          const HeatmapPngLayout::TextBox& u = L.texts[j];
          EXPECT_FALSE(overlap(a, Box{u.x0, u.y0, u.x1, u.y1})) << shape << ": '" << t.text << "' and '" << u.text << "'";
        }
      }
    }
}

TEST(HeatmapPng, TheColourBarMarkIsDrawnWhereItsValueFallsAndOnlyWithinTheBarsRange) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const Grid g = random_grid(rng, 40, 24);
  HeatmapPngOptions opt;
  opt.autofit = false;
  opt.scale = {-2.0f, 6.0f};
  const float value = std::uniform_real_distribution<float>(-2.0f, 6.0f)(rng);
  opt.colorbar_mark = HeatmapPngOptions::ColorbarMark{value, "mark"};
  HeatmapPngLayout L;
  const RgbaImage img = render_heatmap_image(g.view(), opt, &L);
  ASSERT_TRUE(L.colorbar_mark.has_value());
  // A linear bar: row y shows 1 - (y + 0.5) / h of the way from the low end.
  const double want_row = L.colorbar_y + (1.0 - (value + 2.0) / 8.0) * L.colorbar_h - 0.5;
  EXPECT_NEAR(L.colorbar_mark->row, want_row, 1.0) << "value " << value;
  EXPECT_EQ(img.at(L.colorbar_x + L.colorbar_w / 2, L.colorbar_mark->row), (Rgba8{255, 255, 255, 255}));
  const auto label = std::find_if(L.texts.begin(), L.texts.end(), [](const auto& t) { return t.text == "mark"; });
  ASSERT_NE(label, L.texts.end());
  EXPECT_LE(label->y0, L.colorbar_mark->row);
  EXPECT_GT(label->y1, L.colorbar_mark->row) << "the label is level with its line";
  EXPECT_LE(label->x1, L.width);
  bool ink = false;
  for (int y = label->y0; y < label->y1; ++y)
    for (int x = label->x0; x < label->x1; ++x) ink = ink || !(img.at(x, y) == kPngBackground);
  EXPECT_TRUE(ink) << "the label is drawn in its box";
  // Outside the bar's range, or not finite: no mark and no label.
  for (const float outside : {-2.5f, 6.5f, kNaN, kInf}) {
    opt.colorbar_mark->value = outside;
    HeatmapPngLayout none;
    render_heatmap_image(g.view(), opt, &none);
    EXPECT_FALSE(none.colorbar_mark.has_value()) << outside;
    EXPECT_TRUE(std::none_of(none.texts.begin(), none.texts.end(), [](const auto& t) { return t.text == "mark"; })) << outside;
  }
}

TEST(HeatmapPng, FixedScaleIsUsedAsGiven) {
  const std::vector<float> v = {0.0f, 0.5f, 1.0f, 2.0f};
  HeatmapPngOptions opt;
  opt.autofit = false;
  opt.scale = {0.0f, 1.0f};
  opt.colormap = ColormapId::gray;
  HeatmapPngLayout L;
  const RgbaImage img = render_heatmap_image({v, 1, 4}, opt, &L);
  const ColormapTable& gray = colormap_table(ColormapId::gray);
  EXPECT_EQ(img.at(L.plot_x + 0 * L.cell_w, L.plot_y), gray[0]);
  EXPECT_EQ(img.at(L.plot_x + 1 * L.cell_w, L.plot_y), gray[128]);
  EXPECT_EQ(img.at(L.plot_x + 2 * L.cell_w, L.plot_y), gray[255]);
  EXPECT_EQ(img.at(L.plot_x + 3 * L.cell_w, L.plot_y), gray[255]) << "clamped at the white point";
}

TEST(HeatmapPng, UnwritablePathGivesAnErrorAndLeavesNothing) {
  test::TempDir dir;
  const std::vector<float> v = {1.0f, 2.0f, 3.0f, 4.0f};
  // A path under a regular file cannot be created, even by root.
  const auto blocker = dir.path() / "not-a-folder";
  std::ofstream(blocker) << "x";
  const auto target = blocker / "out.png";
  try {
    write_heatmap_png(target, {v, 2, 2}, {});
    FAIL() << "writing under a regular file succeeded";
  } catch (const FileWriteError& e) {
    EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_heatmap_png(dir.path() / "missing" / "out.png", {v, 2, 2}, {}), FileWriteError);
  // Only the blocker is left: no temporary file, no partial PNG.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST(HeatmapPng, RewritingReplacesTheFileWhole) {
  test::TempDir dir;
  const auto path = dir.path() / "h.png";
  const std::vector<float> a = {1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<float> b(64 * 64, 1.0f);
  write_heatmap_png(path, {a, 2, 2}, {});
  const HeatmapPngLayout L = write_heatmap_png(path, {b, 64, 64}, {});
  EXPECT_EQ(load_png(path).width, L.width);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST(HeatmapPng, BadInputIsRefusedWithAReason) {
  const std::vector<float> v(6, 1.0f);
  EXPECT_THROW(render_heatmap_image({v, 2, 4}, {}), GridShapeError);
  EXPECT_THROW(render_heatmap_image({v, 0, 6}, {}), GridShapeError);
  EXPECT_THROW(render_heatmap_image({v, 2, 3, std::vector<uint8_t>(5)}, {}), GridShapeError);
  HeatmapPngOptions bad;
  bad.autofit = false;
  bad.scale = {1.0f, 0.0f};
  EXPECT_THROW(render_heatmap_image({v, 2, 3}, bad), ColorScaleError);
  HeatmapPngOptions small;
  small.max_image_px = 4;
  try {
    render_heatmap_image({v, 2, 3}, small);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("slice"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ts
