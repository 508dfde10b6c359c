// The viewer on real runs, as a person sees it: traces captured at test time (CPU backend,
// inputs from a fresh seed) are opened by tilescope-gui in screenshot mode; the test decodes
// the screenshot and checks the detail heatmaps' cells against the CPU colormap for values it
// takes from the trace file and the float64 reference itself, the NaN colour where the trace
// holds NaN, the first-divergence frame where the analysis puts it, clicks and keys that select
// events in the kernels' order, A/B, the built-in demo, and the error panel for a corrupt file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/trace_session.h"
#include "tests/gui/cell_check.h"
#include "tests/gui/screenshot_run.h"
#include "tests/gui/viewer_fixtures.h"
#include "tests/model/temp_dir.h"
#include "tests/model/test_seed.h"

namespace ts {
namespace {

using testing::check_cells;
using testing::run_screenshot;
using testing::Shot;
using testing::view_named;

// O/l (or O for a normalised event) of event i, straight from the trace's payload.
FloatGrid trace_o_norm(const RunView& run, size_t i) {
  const RunEvent e = run.event(i);
  FloatGrid g{{}, e.header.rows, run.head_dim, {}};
  for (int32_t r = 0; r < e.header.rows; ++r)
    for (int32_t c = 0; c < run.head_dim; ++c) {
      const double o = e.o[static_cast<size_t>(r * run.head_dim + c)], l = e.l[static_cast<size_t>(r)];
      const bool norm = e.header.convention == static_cast<int32_t>(Convention::normalized);
      g.values.push_back(static_cast<float>(norm ? o : (o == 0 && l == 0) ? 0.0 : o / l));
    }
  return g;
}

// The float64 reference's O/l for the event (RunReference: what every probe should have held).
std::vector<double> reference_o_norm(const RunReference& ref, const RunView& run, size_t i) {
  const RefState want = ref.expected(event_key(run.headers[i]));
  std::vector<double> out;
  for (int32_t r = 0; r < want.rows; ++r)
    for (int32_t c = 0; c < want.head_dim; ++c) {
      const double o = want.o[static_cast<size_t>(r * want.head_dim + c)], l = want.l[static_cast<size_t>(r)];
      out.push_back(want.convention == Convention::normalized ? o : (o == 0 && l == 0) ? 0.0 : o / l);
    }
  return out;
}

struct Expected {
  FloatGrid trace, reference, diff;
};

Expected expected_detail(const RunView& run, const RunReference& ref, size_t i) {
  Expected x;
  x.trace = trace_o_norm(run, i);
  const std::vector<double> want = reference_o_norm(ref, run, i);
  x.reference = FloatGrid{{}, x.trace.rows, x.trace.cols, {}};
  x.diff = x.reference;
  for (size_t k = 0; k < want.size(); ++k) {
    const double got = x.trace.values[k];
    x.reference.values.push_back(static_cast<float>(want[k]));
    x.diff.values.push_back(std::isnan(got) ? NAN : got == want[k] ? 0.0f : static_cast<float>(got - want[k]));
  }
  return x;
}

bool has_view(const nlohmann::json& layout, const std::string& name) {
  for (const auto& v : layout["views"])
    if (v["name"] == name) return true;
  return false;
}

// Finds `color` within `reach` pixels of (x, y).
bool color_near(const RgbaImage& img, double x, double y, Rgba8 color, int reach) {
  for (int dy = -reach; dy <= reach; ++dy)
    for (int dx = -reach; dx <= reach; ++dx) {
      const int px = static_cast<int>(std::floor(x)) + dx, py = static_cast<int>(std::floor(y)) + dy;
      if (img.contains(px, py) && img.at(px, py) == color) return true;
    }
  return false;
}

// The divergence frame around cells [row0, row1) x [col0, col1) of view `v`: the mark's colour
// found along each of its four edges, at several points of each.
void expect_frame(const Shot& shot, const nlohmann::json& v, int64_t row0, int64_t row1, int64_t col0, int64_t col1) {
  const Rgba8 mark{64, 224, 255, 255};
  const double ox = v["origin"][0], oy = v["origin"][1], px = v["px_per_cell"][0], py = v["px_per_cell"][1];
  const double x0 = ox + col0 * px, x1 = ox + col1 * px;
  double y0 = oy + row0 * py, y1 = oy + row1 * py;
  if (y1 - y0 < 6) y0 = (y0 + y1) / 2 - 3, y1 = y0 + 6;  // a thin band is drawn at least 6 px tall
  for (double t : {0.15, 0.35, 0.5, 0.65, 0.85}) {
    const double x = x0 + t * (x1 - x0), y = y0 + t * (y1 - y0);
    // Drawn just inside the cells' edges.
    EXPECT_TRUE(color_near(shot.image, x, y0 + 1, mark, 2)) << "top edge at t=" << t;
    EXPECT_TRUE(color_near(shot.image, x, y1 - 1, mark, 2)) << "bottom edge at t=" << t;
    EXPECT_TRUE(color_near(shot.image, x0 + 1, y, mark, 2)) << "left edge at t=" << t;
    EXPECT_TRUE(color_near(shot.image, x1 - 1, y, mark, 2)) << "right edge at t=" << t;
    // ...and not in the middle of them.
    if (x1 - x0 > 16 && y1 - y0 > 16) {
      EXPECT_FALSE(color_near(shot.image, (x0 + x1) / 2, (y0 + y1) / 2, mark, 3));
    }
  }
}

size_t count_color(const RgbaImage& img, Rgba8 c) { return static_cast<size_t>(std::count(img.pixels.begin(), img.pixels.end(), c)); }

TEST(GuiRunScreenshot, MarkColourIsInNoColormap) {
  const Rgba8 mark{64, 224, 255, 255};
  for (ColormapId id : all_colormaps())
    for (const Rgba8& c : colormap_table(id)) EXPECT_NE(c, mark) << colormap_name(id);
  for (CellClass k : {CellClass::nan, CellClass::pos_inf, CellClass::neg_inf, CellClass::masked})
    EXPECT_NE(special_color(k), mark);
}

TEST(GuiRunScreenshot, FirstDivergenceDetailHasTheCpuColormapColours) {
  TS_SEEDED(seed);
  testing::TempDir dir;
  const auto trace = dir.path() / "splitk.trace.safetensors";
  testing::capture_cpu(testing::splitk_small(Fault::double_count_l), seed, trace);
  const RunView run = open_run(trace);
  const RunReference ref(run);
  const AnalysisReport report = analyze_run(run);
  ASSERT_TRUE(report.first_divergence.found);
  const size_t first = static_cast<size_t>(report.first_divergence.event_index);

  const Shot shot = run_screenshot(dir, "detail", {trace.string(), "--select", "first-divergence", "--panel", "detail"});
  EXPECT_EQ(shot.layout["panel"], "detail");
  EXPECT_EQ(shot.layout["selected_event"], first);
  EXPECT_EQ(shot.layout["first_divergence_event"], first);
  EXPECT_TRUE(shot.layout["errors"].empty()) << shot.layout["errors"];
  const Expected x = expected_detail(run, ref, first);
  const auto t = check_cells(shot, view_named(shot.layout, "Trace"), x.trace, 1e-4);
  const auto r = check_cells(shot, view_named(shot.layout, "Reference"), x.reference, 1e-4);
  const auto d = check_cells(shot, view_named(shot.layout, "Diff (trace - reference)"), x.diff, 1e-3);
  EXPECT_EQ(t.cells + t.under_crosshair, x.trace.values.size());
  EXPECT_EQ(r.cells + r.under_crosshair, x.reference.values.size());
  EXPECT_EQ(d.cells + d.under_crosshair, x.diff.values.size());
  EXPECT_LT(t.under_crosshair, x.trace.values.size() / 4) << "most cells are checked";
  // The readout's picked cell: the worst difference, picked when the event was shown.
  const auto& picked = view_named(shot.layout, "Trace")["picked"];
  ASSERT_FALSE(picked.is_null());
  float worst = -1;
  size_t at = 0;
  for (size_t k = 0; k < x.diff.values.size(); ++k)
    if (std::abs(x.diff.values[k]) > worst) worst = std::abs(x.diff.values[k]), at = k;
  EXPECT_EQ(picked[0], at / static_cast<size_t>(x.diff.cols));
  EXPECT_EQ(picked[1], at % static_cast<size_t>(x.diff.cols));
  EXPECT_EQ(t.nan + r.nan, 0u);
  EXPECT_LT(t.near_edge + r.near_edge + d.near_edge, 30u);
  // The rows are the event's query rows, numbered as queries.
  const auto& v = view_named(shot.layout, "Trace");
  EXPECT_EQ(v["rows"], run.headers[first].rows);
  EXPECT_EQ(v["cols"], run.head_dim);
}

TEST(GuiRunScreenshot, MaskedNaNIsDrawnInTheNaNColour) {
  TS_SEEDED(seed);
  testing::TempDir dir;
  const auto trace = dir.path() / "masked.trace.safetensors";
  testing::capture_cpu(testing::splitk_causal_masked(Fault::masked_nan), seed, trace);
  const RunView run = open_run(trace);
  const RunReference ref(run);
  const AnalysisReport report = analyze_run(run);
  ASSERT_TRUE(report.first_divergence.found);
  const size_t first = static_cast<size_t>(report.first_divergence.event_index);
  const Shot shot = run_screenshot(dir, "masked", {trace.string(), "--select", "first-divergence", "--panel", "detail"});
  EXPECT_EQ(shot.layout["selected_event"], first);
  const Expected x = expected_detail(run, ref, first);
  size_t nan_cells = 0;
  for (float f : x.trace.values) nan_cells += std::isnan(f);
  ASSERT_GT(nan_cells, 0u) << "the trace holds NaN at the first divergence";
  const auto t = check_cells(shot, view_named(shot.layout, "Trace"), x.trace, 1e-4);
  const auto d = check_cells(shot, view_named(shot.layout, "Diff (trace - reference)"), x.diff, 1e-3);
  // NaN cells outside the picked cell's crosshair (the pick is a NaN cell: NaN sorts first).
  size_t nan_checked = 0;
  const auto& picked = view_named(shot.layout, "Trace")["picked"];
  for (int64_t r = 0; r < x.trace.rows; ++r)
    for (int64_t c = 0; c < x.trace.cols; ++c)
      nan_checked += std::isnan(x.trace.values[static_cast<size_t>(r * x.trace.cols + c)]) && picked[0] != r && picked[1] != c;
  ASSERT_GT(nan_checked, 0u);
  EXPECT_EQ(t.nan, nan_checked) << "every NaN cell in the NaN colour";
  EXPECT_EQ(d.nan, nan_checked) << "and in the diff";
  check_cells(shot, view_named(shot.layout, "Reference"), x.reference, 1e-4);
}

// Opens `trace` at its first divergence and checks the overview: the frame on the error grid
// and the navigator where the analysis puts the divergent event, the grid's cells in the CPU
// colormap's colours for the analysis's error ratios.
void expect_first_divergence_framed(testing::TempDir& dir, const std::filesystem::path& trace) {
  const RunView run = open_run(trace);
  const AnalysisReport report = analyze_run(run);
  const Divergence& dv = report.first_divergence;
  ASSERT_TRUE(dv.found);
  const EventHeader& h = run.headers[static_cast<size_t>(dv.event_index)];
  const int64_t row0 = int64_t{h.q_tile} * run.block_m, row1 = row0 + h.rows;

  const Shot shot = run_screenshot(dir, "overview", {trace.string(), "--select", "first-divergence", "--panel", "overview"}, "1800x1060");
  ASSERT_TRUE(has_view(shot.layout, "Error by query"));
  const auto& grid = view_named(shot.layout, "Error by query");
  EXPECT_EQ(grid["rows"], run.config.seq_q);
  EXPECT_EQ(grid["cols"], run.tiling.num_splits);
  bool marked = false;
  for (const auto& m : shot.layout["marks"]) {
    if (m["name"] != "first divergence" || m["view"] != "Error by query") continue;
    marked = true;
    EXPECT_EQ(m["rows"][0], row0);
    EXPECT_EQ(m["rows"][1], row1);
    EXPECT_EQ(m["cols"][0], h.split);
    EXPECT_EQ(m["cols"][1], h.split + 1);
  }
  EXPECT_TRUE(marked) << shot.layout["marks"];
  expect_frame(shot, grid, row0, row1, h.split, h.split + 1);
  // The navigator frames the divergent event's tile on its stage's grid.
  const auto& nav = view_named(shot.layout, "Navigator splitk.reduce");
  expect_frame(shot, nav, h.q_tile, h.q_tile + 1, h.split, h.split + 1);
  // The grid's cells are the analysis's error ratios, in the CPU colormap's colours.
  const ErrorGrid* g = nullptr;
  for (const ErrorGrid& e : report.overview)
    if (e.batch == h.batch && e.head == h.head) g = &e;
  ASSERT_NE(g, nullptr);
  const auto c = check_cells(shot, grid, g->grid, 1e-3);
  EXPECT_GT(c.cells, 0u);
}

TEST(GuiRunScreenshot, FirstDivergenceIsFramedOnTheOverviewWhereTheAnalysisSays) {
  TS_SEEDED(seed);
  testing::TempDir dir;
  const auto trace = dir.path() / "splitk.trace.safetensors";
  testing::capture_cpu(testing::splitk_small(Fault::double_count_l), seed, trace);
  expect_first_divergence_framed(dir, trace);
}

// The same on a trace captured on an H200 (assets/traces, docs/gpu-validation.md).
TEST(GuiRunScreenshot, AGpuTraceOpensAtItsFirstDivergence) {
  testing::TempDir dir;
  expect_first_divergence_framed(dir, std::filesystem::path(TS_ASSETS_DIR) / "traces/splitk_double_count_l.gpu.trace.safetensors");
}

TEST(GuiRunScreenshot, ClicksAndKeysSelectEventsInTheKernelsOrder) {
  TS_SEEDED(seed);
  testing::TempDir dir;
  const auto trace = dir.path() / "splitk.trace.safetensors";
  testing::capture_cpu(testing::splitk_small(Fault::double_count_l), seed, trace);
  const RunView run = open_run(trace);
  const AnalysisReport report = analyze_run(run);
  auto index_of = [&](Stage st, int32_t head, int32_t q_tile, int32_t split) -> size_t {
    for (size_t i = 0; i < run.num_events(); ++i) {
      const EventHeader& h = run.headers[i];
      if (h.stage == static_cast<int32_t>(st) && h.head == head && h.q_tile == q_tile && h.split == split) return i;
    }
    ADD_FAILURE() << "no such event";
    return 0;
  };
  const Shot before = run_screenshot(dir, "before", {trace.string(), "--select", "event:0"});
  const auto& grid = view_named(before.layout, "Error by query");
  const double ox = grid["origin"][0], oy = grid["origin"][1], px = grid["px_per_cell"][0], py = grid["px_per_cell"][1];
  // Home, three steps, a click on cell (query 12, split 2) of the error grid, then N from
  // there, then Shift+N, each step read back from a screenshot of its own.
  struct Step {
    std::string script;
    size_t want;
  };
  const int32_t head0 = run.headers[0].head;
  const std::vector<Step> steps = {
      {"1 key home\n", index_of(Stage::splitk_partial, 0, 0, 0)},
      {"1 key home\n3 key rbracket\n5 key pagedown\n7 key rbracket\n", index_of(Stage::splitk_partial, 0, 0, 3)},
      {"1 key home\n3 key rbracket\n5 key lbracket\n", index_of(Stage::splitk_partial, 0, 0, 0)},
      {"1 move " + std::to_string(std::floor(ox + 2.5 * px)) + " " + std::to_string(std::floor(oy + 12.5 * py)) +
           "\n2 down left\n3 up left\n",
       index_of(Stage::splitk_reduce, head0, 12 / run.block_m, 2)},
      {"1 key home\n3 key n\n", static_cast<size_t>(report.first_divergence.event_index)},
      {"1 key end\n3 key shift+n\n", static_cast<size_t>(report.first_divergence.event_index)},
  };
  for (size_t k = 0; k < steps.size(); ++k) {
    SCOPED_TRACE("step " + std::to_string(k) + ": " + steps[k].script);
    const auto script = dir.path() / ("step" + std::to_string(k) + ".script");
    std::ofstream(script) << steps[k].script;
    const Shot s = run_screenshot(dir, "step" + std::to_string(k),
                                  {trace.string(), "--select", "event:0", "--input-script", script.string(), "--frames", "10"});
    EXPECT_EQ(s.layout["selected_event"], steps[k].want);
  }
}

TEST(GuiRunScreenshot, ABShowsBothRunsAndTheirDifference) {
  TS_SEEDED(seed);
  testing::TempDir dir;
  const testing::FaultAndFix ab = testing::capture_fault_and_fix(dir.path(), seed);
  const Shot shot = run_screenshot(
      dir, "ab", {ab.faulty.string(), "--against", ab.fixed.string(), "--select", "first-divergence", "--panel", "ab"});
  EXPECT_EQ(shot.layout["panel"], "ab");
  EXPECT_EQ(shot.layout["run_b"], "fixed.trace.safetensors");
  const FloatGrid ga = trace_o_norm(ab.a, ab.first), gb = trace_o_norm(ab.b, ab.first_in_b);
  FloatGrid diff{{}, ga.rows, ga.cols, {}};
  for (size_t k = 0; k < ga.values.size(); ++k) diff.values.push_back(ga.values[k] - gb.values[k]);
  check_cells(shot, view_named(shot.layout, "A"), ga, 1e-4);
  check_cells(shot, view_named(shot.layout, "B"), gb, 1e-4);
  check_cells(shot, view_named(shot.layout, "A - B"), diff, 1e-3);
}

TEST(GuiRunScreenshot, TheBuiltInDemoIsCapturedOnTheWorkerAndOpened) {
  testing::TempDir dir;
  const Shot shot = run_screenshot(dir, "demo", {"--demo", "--select", "first-divergence"});
  EXPECT_EQ(shot.layout["run"], "capture (cpu)");
  EXPECT_FALSE(shot.layout["selected_event"].is_null());
  EXPECT_EQ(shot.layout["selected_event"], shot.layout["first_divergence_event"]) << "double_count_l diverges";
  EXPECT_TRUE(has_view(shot.layout, "Trace"));
  EXPECT_TRUE(has_view(shot.layout, "Error by query"));
}

TEST(GuiRunScreenshot, ACorruptFileIsReportedInTheWindowAndTheViewerCarriesOn) {
  testing::TempDir dir;
  const auto corrupt = dir.path() / "corrupt.trace.safetensors";
  std::ofstream(corrupt) << std::string(64, '\x7f') << "not a safetensors header";
  // The window shows the error; the headless run still fails as the CLI would (exit 2).
  const Shot shot = run_screenshot(dir, "corrupt", {corrupt.string()}, "1600x1000", 2);
  ASSERT_EQ(shot.layout["errors"].size(), 1u);
  const std::string error = shot.layout["errors"][0];
  EXPECT_NE(error.find("corrupt.trace.safetensors"), std::string::npos) << error;
  EXPECT_TRUE(shot.layout["run"].is_null());
  EXPECT_GT(count_color(shot.image, Rgba8{52, 24, 26, 255}), 20000u) << "the error panel is drawn";
  // A missing file too.
  const Shot missing = run_screenshot(dir, "missing", {(dir.path() / "nope.trace.safetensors").string()}, "1600x1000", 2);
  ASSERT_EQ(missing.layout["errors"].size(), 1u);
  EXPECT_NE(missing.layout["errors"][0].get<std::string>().find("nope.trace.safetensors"), std::string::npos);
}

TEST(GuiRunScreenshot, LaunchPanelShowsEveryField) {
  testing::TempDir dir;
  const Shot shot = run_screenshot(dir, "launch", {"--panel", "launch"});
  EXPECT_EQ(shot.layout["panel"], "launch");
  EXPECT_TRUE(shot.layout["views"].empty());
  EXPECT_TRUE(shot.layout["errors"].empty()) << shot.layout["errors"];
}

}  // namespace
}  // namespace ts
