// The tolerance scale and the timeline as a person sees them: error maps on the one fixed tolerance scale (a clean run cool, a
// failing run hot, the same colours for the same ratios whatever the run), absent cells in their
// own colours (masked; not traced where the capture's filters left rows out), the picked cell's
// numbers, and the timeline of a real GPU trace (assets/traces) with one lane per SM. Set
// TS_KEEP_SCREENSHOTS to a folder to keep the PNGs for a look.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "app/model/analysis/analyze_run.h"
#include "app/model/colormap.h"
#include "app/model/trace_session.h"
#include "app/model/viewer/event_grids.h"
#include "tests/gui/cell_check.h"
#include "tests/gui/screenshot_run.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::run_screenshot;
using test::Shot;
using test::view_named;

void keep(const test::TempDir& dir, const std::string& name) {
  if (const char* to = std::getenv("TS_KEEP_SCREENSHOTS")) {
    std::filesystem::create_directories(to);
    std::filesystem::copy_file(dir.path() / (name + ".png"), std::filesystem::path(to) / (name + ".png"),
                               std::filesystem::copy_options::overwrite_existing);
  }
}

// Pixels of a rectangle in the lower (within tolerance) and upper (over it) half of the
// tolerance colormap.
struct Halves {
  size_t cool = 0, hot = 0;
};
Halves count_halves(const RgbaImage& img, double x0, double y0, double x1, double y1) {
  std::map<uint32_t, int> index;
  const ColormapTable& t = colormap_table(kToleranceColormap);
  for (size_t i = 0; i < t.size(); ++i) index[(uint32_t{t[i].r} << 16) | (uint32_t{t[i].g} << 8) | t[i].b] = static_cast<int>(i);
  Halves h;
  for (int y = static_cast<int>(y0); y < static_cast<int>(y1); ++y)
    for (int x = static_cast<int>(x0); x < static_cast<int>(x1); ++x) {
      if (!img.contains(x, y)) continue;
      const Rgba8 c = img.at(x, y);
      const auto it = index.find((uint32_t{c.r} << 16) | (uint32_t{c.g} << 8) | c.b);
      if (it == index.end()) continue;
      (it->second < 128 ? h.cool : h.hot) += 1;
    }
  return h;
}

Halves view_halves(const Shot& s, const nlohmann::json& v) {
  const double fx = s.layout["framebuffer_scale"][0], fy = s.layout["framebuffer_scale"][1];
  return count_halves(s.image, v["image_min"][0].get<double>() * fx, v["image_min"][1].get<double>() * fy,
                      v["image_max"][0].get<double>() * fx, v["image_max"][1].get<double>() * fy);
}

TEST(GuiTolerance, ACleanRunIsCoolAndAFailingRunHotOnTheSameScale) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto clean = dir.path() / "clean.trace.safetensors", failing = dir.path() / "failing.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::none), seed, clean);
  test::capture_cpu(test::splitk_small(Fault::double_count_l), seed, failing);
  const Shot a = run_screenshot(dir, "clean_overview", {clean.string(), "--panel", "overview"}, "1366x768");
  const Shot b = run_screenshot(dir, "failing_overview", {failing.string(), "--panel", "overview"}, "1366x768");
  keep(dir, "clean_overview");
  keep(dir, "failing_overview");
  for (const Shot* s : {&a, &b}) {
    EXPECT_TRUE(s->layout["errors"].empty()) << s->layout["errors"];
    for (const auto& v : s->layout["views"]) {
      // Every error map: the tolerance colormap on the fixed scale, split at 1.
      EXPECT_EQ(v["colormap"], "tolerance") << v["name"];
      EXPECT_NEAR(v["scale"]["min"].get<double>(), 1e-3, 1e-9) << v["name"];
      EXPECT_NEAR(v["scale"]["max"].get<double>(), 1e3, 1e-3) << v["name"];
      EXPECT_TRUE(v["scale"]["split"].get<bool>()) << v["name"];
      EXPECT_EQ(v["scale"]["split_at"].get<double>(), 1.0) << v["name"];
    }
  }
  // Reduce and final: clean -> nothing over the tolerance; failing -> much of it.
  const Halves ca = view_halves(a, view_named(a.layout, "Error by query"));
  EXPECT_GT(ca.cool, 1000u);
  EXPECT_EQ(ca.hot, 0u) << "a clean run has no cell over the tolerance";
  const Halves fb = view_halves(b, view_named(b.layout, "Error by query"));
  EXPECT_GT(fb.hot, 1000u) << "a failing run is hot";
  // The grids' cells are the analysis's ratios in the CPU colormap's colours (same scale in both).
  for (const auto& [trace, shot] : {std::pair{clean, &a}, std::pair{failing, &b}}) {
    const RunView run = open_run(trace);
    const AnalysisReport report = analyze_run(run);
    const ErrorGrid* g = nullptr;
    for (const ErrorGrid& e : report.overview)
      if (e.batch == 0 && e.head == 0) g = &e;
    ASSERT_NE(g, nullptr);
    const auto c = test::check_cells(*shot, view_named(shot->layout, "Error by query"), g->grid, 1e-3);
    EXPECT_GT(c.cells, 0u);
  }
}

TEST(GuiTolerance, MaskedAndNotTracedCellsHaveTheirOwnColours) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "filtered.trace.safetensors";
  // Causal (later splits see no key for early rows: masked cells) with the first query rows
  // filtered out of the capture (not traced).
  CaptureSpec spec = test::cpu_spec(test::splitk_causal_masked(Fault::none), seed);
  spec.trace.filter.query_begin = 16;
  test::capture_cpu(spec, trace);
  const Shot s = run_screenshot(dir, "absent_cells", {trace.string(), "--panel", "overview"}, "1800x1060");
  keep(dir, "absent_cells");
  EXPECT_TRUE(s.layout["errors"].empty()) << s.layout["errors"];
  const RunView run = open_run(trace);
  const AnalysisReport report = analyze_run(run);
  const ErrorGrid* g = nullptr;
  for (const ErrorGrid& e : report.overview)
    if (e.batch == 0 && e.head == 0) g = &e;
  ASSERT_NE(g, nullptr);
  size_t not_traced = 0;
  for (uint8_t m : g->grid.mask) not_traced += m == static_cast<uint8_t>(AbsentCell::not_traced);
  EXPECT_EQ(not_traced, 16u * g->grid.cols) << "the 16 filtered query rows, in every column";
  // The grid's rows are under a pixel each here: count the colour rather than sample cells.
  EXPECT_GT(std::count(s.image.pixels.begin(), s.image.pixels.end(), special_color(CellClass::not_traced)), 1000);
  // The navigator of the kv tiles: tiles whose rows see no key (causal) are masked cells.
  const std::vector<NavigatorGrid> nav = event_navigator(run, report, 0, 0);
  const NavigatorGrid* tiles = nullptr;
  for (const NavigatorGrid& n : nav)
    if (run.stages[static_cast<size_t>(n.stage)].name == "splitk.tile") tiles = &n;
  ASSERT_NE(tiles, nullptr);
  const auto c = test::check_cells(s, view_named(s.layout, "Navigator splitk.tile"), tiles->values, 1e-3);
  EXPECT_GT(c.masked, 0u) << "causal: kv tiles the rows see no key of";
  EXPECT_GT(c.cells, c.masked);
}

TEST(GuiTolerance, ThePickedCellsNumbersAreInTheWindow) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "failing.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::double_count_l), seed, trace);
  const Shot s = run_screenshot(dir, "readout", {trace.string(), "--select", "first-divergence"}, "1366x768");
  keep(dir, "readout");
  ASSERT_TRUE(s.layout.contains("readout")) << "a cell is picked at the first divergence";
  const std::string text = s.layout["readout"];
  for (const char* word : {"query row: ", "O/l trace: ", "allowed: ", "error / tolerance: "})
    EXPECT_NE(text.find(word), std::string::npos) << text;
  EXPECT_NE(text.find("over the tolerance"), std::string::npos) << "the worst cell of a failing event: " << text;
}

TEST(GuiTolerance, SelectingAnEventPastTheEndIsAnError) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "run.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::none), seed, trace);
  // Headless: exit 2 as the CLI would, the error in the window, the run still shown.
  const Shot s = run_screenshot(dir, "bad_select", {trace.string(), "--select", "event:999999"}, "1366x768", 2);
  ASSERT_EQ(s.layout["errors"].size(), 1u);
  EXPECT_NE(s.layout["errors"][0].get<std::string>().find("999999"), std::string::npos) << s.layout["errors"];
  EXPECT_FALSE(s.layout["run"].is_null());
}

TEST(GuiTolerance, TwoRunsOpenOnTheABTab) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto a = dir.path() / "a.trace.safetensors", b = dir.path() / "b.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::double_count_l), seed, a);
  test::capture_cpu(test::splitk_small(Fault::none), seed, b);
  const Shot s = run_screenshot(dir, "against", {a.string(), "--against", b.string()}, "1366x768");
  keep(dir, "against");
  EXPECT_EQ(s.layout["panel"], "ab");
  EXPECT_FALSE(s.layout["run_b"].is_null());
  EXPECT_TRUE(s.layout["errors"].empty()) << s.layout["errors"];
}

TEST(GuiTimeline, AGpuTraceShowsItsSMsAndItsErrors) {
  test::TempDir dir;
  const auto trace = std::filesystem::path(TS_ASSETS_DIR) / "traces/splitk_double_count_l.gpu.trace.safetensors";
  const Shot s = run_screenshot(dir, "timeline_gpu", {trace.string(), "--panel", "timeline"}, "1366x768");
  keep(dir, "timeline_gpu");
  EXPECT_TRUE(s.layout["errors"].empty()) << s.layout["errors"];
  EXPECT_EQ(s.layout["panel"], "timeline");
  const auto& t = s.layout["timeline"];
  EXPECT_TRUE(t["gpu"].get<bool>());
  EXPECT_GT(t["lanes"].size(), 1u) << "the events ran on several SMs";
  EXPECT_GT(t["boxes"].get<size_t>(), 10u);
  EXPECT_GT(t["end_ns"].get<int64_t>(), 0);
  // The launch gap between the partial and the reduce pass is drawn narrow.
  EXPECT_GE(t["idle_gaps"].get<size_t>(), 1u);
  // The partials are right (cool), the reduce is wrong (hot): both show in the lanes.
  const double fx = s.layout["framebuffer_scale"][0], fy = s.layout["framebuffer_scale"][1];
  const auto& p = t["plot"];
  const Halves h = count_halves(s.image, p[0].get<double>() * fx, p[1].get<double>() * fy,
                                (p[0].get<double>() + p[2].get<double>()) * fx,
                                (p[1].get<double>() + p[3].get<double>()) * fy);
  EXPECT_GT(h.cool, 50u);
  EXPECT_GT(h.hot, 50u);
}

TEST(GuiTimeline, ACpuTraceShowsItsWorkers) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "cpu.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::none), seed, trace);
  const Shot s = run_screenshot(dir, "timeline_cpu", {trace.string(), "--panel", "timeline"}, "1366x768");
  keep(dir, "timeline_cpu");
  EXPECT_TRUE(s.layout["errors"].empty()) << s.layout["errors"];
  const auto& t = s.layout["timeline"];
  EXPECT_FALSE(t["gpu"].get<bool>());
  EXPECT_EQ(t["clock"], "CPU steady clock");
  EXPECT_GE(t["lanes"].size(), 1u);
}

}  // namespace
}  // namespace ts
