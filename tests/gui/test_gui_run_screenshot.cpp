// The viewer on real runs, as a person sees it: traces captured at test time (CPU backend,
// inputs from a fresh seed) and a user's trace the test writes itself (its own stage table) are
// opened by tilescope-gui in screenshot mode; the test decodes the screenshot and checks the
// detail heatmaps' cells against the CPU colormap for values it takes from the trace file and the
// float64 reference itself, the NaN colour where the trace holds NaN, the first-divergence frame
// where the analysis puts it, the stages listed by their names, clicks and keys that select
// events in the kernel's order, A/B, the built-in demo, and the error panel for a corrupt file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/trace_session.h"
#include "app/model/viewer/pair_overview.h"
#include "app/model/viewer/stage_series.h"
#include "tests/gui/cell_check.h"
#include "tests/gui/screenshot_run.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::check_cells;
using test::run_screenshot;
using test::Shot;
using test::view_named;

// O/l (or O for a normalised event) of event i, straight from the trace's payload.
FloatGrid trace_o_norm(const RunView& run, size_t i) {
  const RunEvent e = run.event(i);
  FloatGrid g{{}, e.header.rows, run.head_dim, {}};
  for (int32_t r = 0; r < e.header.rows; ++r)
    for (int32_t c = 0; c < run.head_dim; ++c) {
      const double o = e.o[static_cast<size_t>(r * run.head_dim + c)], l = e.l[static_cast<size_t>(r)];
      const bool norm = (e.header.convention & kNormalized) != 0;
      g.values.push_back(static_cast<float>(norm ? o : (o == 0 && l == 0) ? 0.0 : o / l));
    }
  return g;
}

// The float64 reference's O/l for the event (RunReference: what every probe should have held).
std::vector<double> reference_o_norm(const RunReference& ref, const RunView& run, size_t i) {
  const RefState want = ref.expected(run.headers[i]);
  std::vector<double> out;
  for (int32_t r = 0; r < want.rows; ++r)
    for (int32_t c = 0; c < want.head_dim; ++c) {
      const double o = want.o[static_cast<size_t>(r * want.head_dim + c)], l = want.l[static_cast<size_t>(r)];
      out.push_back(want.normalized ? o : (o == 0 && l == 0) ? 0.0 : o / l);
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

// Finds a colour within `distance` (per channel) of `color` within `reach` pixels of (x, y): an
// antialiased line's pixels are blends at its edges.
bool color_close(const RgbaImage& img, double x, double y, Rgba8 color, int reach, int distance) {
  for (int dy = -reach; dy <= reach; ++dy)
    for (int dx = -reach; dx <= reach; ++dx) {
      const int px = static_cast<int>(std::floor(x)) + dx, py = static_cast<int>(std::floor(y)) + dy;
      if (!img.contains(px, py)) continue;
      const Rgba8 c = img.at(px, py);
      if (std::abs(c.r - color.r) <= distance && std::abs(c.g - color.g) <= distance && std::abs(c.b - color.b) <= distance)
        return true;
    }
  return false;
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
  test::TempDir dir;
  const auto trace = dir.path() / "splitk.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::double_count_l), seed, trace);
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
  test::TempDir dir;
  const auto trace = dir.path() / "masked.trace.safetensors";
  test::capture_cpu(test::splitk_causal_masked(Fault::masked_nan), seed, trace);
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

// The rank of `value` among the distinct `values` (a navigator's row or column).
template <class T>
int64_t rank_of(std::vector<T> values, const T& value) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return std::lower_bound(values.begin(), values.end(), value) - values.begin();
}

// Opens `trace` at its first divergence and checks the overview: the frame on the error grid
// and the navigator where the analysis puts the divergent event, the grid's cells in the CPU
// colormap's colours for the analysis's error ratios.
void expect_first_divergence_framed(test::TempDir& dir, const std::filesystem::path& trace) {
  const RunView run = open_run(trace);
  const AnalysisReport report = analyze_run(run);
  const Divergence& dv = report.first_divergence;
  ASSERT_TRUE(dv.found);
  const EventHeader& h = run.headers[static_cast<size_t>(dv.event_index)];
  const StageInfo& stage = run.stage_of(static_cast<size_t>(dv.event_index));
  const int64_t row0 = h.q_begin, row1 = row0 + h.rows;
  const ErrorGrid* g = nullptr;
  for (const ErrorGrid& e : report.overview)
    if (e.batch == h.batch && e.head == h.head) g = &e;
  ASSERT_NE(g, nullptr);
  // The divergent event's column: where its keys end among the key positions of the overview.
  const int64_t key_end = event_key_end(h, stage, run.attention);
  const auto at = std::find(g->column_keys.begin(), g->column_keys.end(), key_end);
  ASSERT_NE(at, g->column_keys.end());
  const int64_t col = at - g->column_keys.begin();

  const Shot shot = run_screenshot(dir, "overview", {trace.string(), "--select", "first-divergence", "--panel", "overview"}, "1800x1060");
  ASSERT_TRUE(has_view(shot.layout, "Error by query"));
  const auto& grid = view_named(shot.layout, "Error by query");
  EXPECT_EQ(grid["rows"], run.attention.seq_q);
  EXPECT_EQ(grid["cols"], g->column_keys.size());
  bool marked = false;
  for (const auto& m : shot.layout["marks"]) {
    if (m["name"] != "first divergence" || m["view"] != "Error by query") continue;
    marked = true;
    EXPECT_EQ(m["rows"][0], row0);
    EXPECT_EQ(m["rows"][1], row1);
    EXPECT_EQ(m["cols"][0], col);
    EXPECT_EQ(m["cols"][1], col + 1);
  }
  EXPECT_TRUE(marked) << shot.layout["marks"];
  expect_frame(shot, grid, row0, row1, col, col + 1);
  // The navigator frames the divergent event on its stage's grid: its row block among the
  // stage's row blocks of the pair, its key end among their key ends.
  std::vector<int32_t> q_begins;
  std::vector<int64_t> ends;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& e = run.headers[i];
    if (e.stage != h.stage || e.batch != h.batch || e.head != h.head) continue;
    q_begins.push_back(e.q_begin);
    ends.push_back(event_key_end(e, stage, run.attention));
  }
  const auto& nav = view_named(shot.layout, "Navigator " + stage.name);
  const int64_t nav_row = rank_of(q_begins, h.q_begin), nav_col = rank_of(ends, key_end);
  expect_frame(shot, nav, nav_row, nav_row + 1, nav_col, nav_col + 1);
  // The grid's cells are the analysis's error ratios, in the CPU colormap's colours.
  const auto c = check_cells(shot, grid, g->grid, 1e-3);
  EXPECT_GT(c.cells, 0u);
}

TEST(GuiRunScreenshot, FirstDivergenceIsFramedOnTheOverviewWhereTheAnalysisSays) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "splitk.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::double_count_l), seed, trace);
  expect_first_divergence_framed(dir, trace);
}

// Decode (one query row, GQA): the overview is every (batch, query head) by key position in one
// grid, the first divergence framed on its pair's row and key end, the cells the decode
// overview's values (pair_overview.h) in the CPU colormap's colours; the per-pair grid is not drawn.
TEST(GuiRunScreenshot, DecodeOverviewShowsEveryPairWithTheFirstDivergenceFramed) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "decode.trace.safetensors";
  test::capture_cpu(test::splitk_decode_gqa(Fault::double_count_l), seed, trace);
  const RunView run = open_run(trace);
  const AnalysisReport report = analyze_run(run);
  const PairOverview o = pair_overview(run, report);
  ASSERT_TRUE(o.divergence.has_value());

  const Shot shot = run_screenshot(dir, "decode", {trace.string(), "--select", "first-divergence", "--panel", "overview"},
                                   "1800x1060");
  EXPECT_FALSE(has_view(shot.layout, "Error by query"));
  ASSERT_TRUE(has_view(shot.layout, "Error by pair"));
  const auto& grid = view_named(shot.layout, "Error by pair");
  EXPECT_EQ(grid["rows"], 16);  // 2 batches x 8 query heads
  EXPECT_EQ(grid["cols"], o.column_keys.size());
  bool marked = false;
  for (const auto& m : shot.layout["marks"]) {
    if (m["name"] != "first divergence" || m["view"] != "Error by pair") continue;
    marked = true;
    EXPECT_EQ(m["rows"][0], o.divergence->row);
    EXPECT_EQ(m["cols"][0], o.divergence->col);
  }
  EXPECT_TRUE(marked) << shot.layout["marks"];
  expect_frame(shot, grid, o.divergence->row, o.divergence->row + 1, o.divergence->col, o.divergence->col + 1);
  const auto c = check_cells(shot, grid, o.values, 1e-3);
  EXPECT_GT(c.cells, 0u);

  // Each labelled row says its batch and query head (was: the head alone, "0 ... 7 0 ... 7"):
  // rows go by batch, then query head (this run's GQA groups are runs of consecutive heads).
  const auto& labels = grid["row_labels"];
  ASSERT_GE(labels.size(), 2u) << grid.dump();
  const int64_t heads = run.attention.heads_q;
  bool second_batch = false;
  for (size_t i = 0; i < labels.size(); ++i) {
    const int64_t r = labels[i]["row"];
    EXPECT_EQ(labels[i]["text"], "b" + std::to_string(r / heads) + " h" + std::to_string(r % heads));
    second_batch |= r / heads == 1;
    // Beside the image, each clear of the next one.
    EXPECT_LE(labels[i]["max"][0].get<double>(), grid["image_min"][0].get<double>()) << labels[i];
    if (i + 1 < labels.size()) {
      EXPECT_LE(labels[i]["max"][1].get<double>(), labels[i + 1]["min"][1].get<double>());
    }
  }
  EXPECT_TRUE(second_batch) << labels;
}

// Decode with GQA (8 query heads on 2 kv heads, as `tilescope capture --heads 8 --heads-kv 2
// --seq-q 1` makes it), both panels, the curves across the group (--curves group): each group of
// the overview is labelled beside its rows ("batch 1, kv head 0: heads 0-3"), its label's text
// drawn there; a dark line lies between the groups of a batch; and the detail's m and l curves
// put a point per query head of the selected event's group, each at that head's own m and l
// (group_series), drawn in the trace's colour where the plot's frame says.
TEST(GuiRunScreenshot, DecodeGqaGroupsAreLabelledAndTheCurvesRunAcrossOne) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "decode.trace.safetensors";
  test::capture_cpu(test::splitk_decode_gqa(Fault::double_count_l), seed, trace);
  const RunView run = open_run(trace);
  RunReference ref(run);
  const AnalysisReport report = analyze_run(run, ref);
  const PairOverview o = pair_overview(run, report);
  ASSERT_EQ(o.groups.size(), size_t{4});

  const Shot shot = run_screenshot(dir, "gqa", {trace.string(), "--select", "first-divergence", "--curves", "group"},
                                   "1800x1060");
  EXPECT_TRUE(shot.layout["errors"].empty()) << shot.layout["errors"];
  const auto& grid = view_named(shot.layout, "Error by pair");
  const double fx = shot.layout["framebuffer_scale"][0], fy = shot.layout["framebuffer_scale"][1];
  const double oy = grid["origin"][1], py = grid["px_per_cell"][1];
  const double gx0 = grid["image_min"][0], gx1 = grid["image_max"][0];

  // Every group's label, beside the grid and level with its rows, with text drawn in it.
  for (const PairGroup& g : o.groups) {
    const std::string name = "group batch " + std::to_string(g.batch) + ", " + g.label;
    SCOPED_TRACE(name);
    const nlohmann::json* mark = nullptr;
    for (const auto& m : shot.layout["marks"])
      if (m["name"] == name) mark = &m;
    ASSERT_NE(mark, nullptr) << shot.layout["marks"];
    EXPECT_EQ((*mark)["rows"][0], g.row0);
    EXPECT_EQ((*mark)["rows"][1], g.row1);
    const double x0 = (*mark)["min"][0], y0 = (*mark)["min"][1], x1 = (*mark)["max"][0], y1 = (*mark)["max"][1];
    EXPECT_GE(x0, gx1);
    EXPECT_GE((y0 + y1) / 2, oy + g.row0 * py - 1);
    EXPECT_LE((y0 + y1) / 2, oy + g.row1 * py + 1);
    size_t text = 0;
    for (int y = static_cast<int>(y0 * fy); y < static_cast<int>(y1 * fy); ++y)
      for (int x = static_cast<int>(x0 * fx); x < static_cast<int>(x1 * fx); ++x)
        if (shot.image.contains(x, y)) {
          const Rgba8 c = shot.image.at(x, y);
          text += c.r > 150 && c.g > 150 && c.b > 150;
        }
    EXPECT_GT(text, 40u) << "no text drawn in the label";
  }
  // The dark line between the two kv heads of a batch, across the grid.
  for (size_t k = 1; k < o.groups.size(); ++k) {
    if (o.groups[k].batch != o.groups[k - 1].batch) continue;
    const double y = std::round(oy + o.groups[k].row0 * py);
    size_t dark = 0, samples = 0;
    for (double x = gx0 + 4; x < gx1 - 4; x += 7, ++samples) {
      bool found = false;
      for (int dy : {-1, 0})
        if (const int yy = static_cast<int>(y * fy) + dy; shot.image.contains(static_cast<int>(x * fx), yy)) {
          const Rgba8 c = shot.image.at(static_cast<int>(x * fx), yy);
          found |= std::max({c.r, c.g, c.b}) < 70;
        }
      dark += found;
    }
    EXPECT_GT(dark, samples * 9 / 10) << "group line at row " << o.groups[k].row0;
  }

  // The curves: across the first divergence's group, a point per head at its own m and l.
  const size_t div = static_cast<size_t>(report.first_divergence.event_index);
  const auto series = group_series(run, ref, report, div);
  ASSERT_TRUE(series.has_value());
  const auto& curves = shot.layout["curves"];
  EXPECT_TRUE(curves["over_group"].get<bool>());
  EXPECT_EQ(curves["group"], series->group);
  EXPECT_EQ(curves["x_label"], "query head");
  EXPECT_EQ(curves["first_x"], series->first_x);
  EXPECT_EQ(curves["selected"], series->selected);
  const Rgba8 trace_colour{255, 140, 70, 255};  // theme::kTraceCurve
  size_t plots = 0;
  for (const auto& p : curves["plots"]) {
    if (p["id"] != "m" && p["id"] != "l") continue;
    ++plots;
    SCOPED_TRACE(p["id"].get<std::string>());
    const std::vector<float>& want = p["id"] == "m" ? series->m_trace : series->l_trace;
    const auto& y = p["series"][0]["y"];
    ASSERT_EQ(y.size(), want.size());
    const double ax = p["min"][0], ay = p["min"][1], bx = p["max"][0], by = p["max"][1];
    const double x0 = p["x_range"][0], x1 = p["x_range"][1], y0 = p["y_range"][0], y1 = p["y_range"][1];
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(y[k].get<float>(), want[k]) << "head " << series->first_x + static_cast<int64_t>(k);
      const double hx = ax + (static_cast<double>(series->first_x + static_cast<int64_t>(k)) - x0) / (x1 - x0) * (bx - ax);
      const double hy = by - (want[k] - y0) / (y1 - y0) * (by - ay);
      EXPECT_TRUE(color_close(shot.image, hx * fx, hy * fy, trace_colour, 3, 40))
          << "no trace curve at head " << series->first_x + static_cast<int64_t>(k) << " (" << hx << ", " << hy << ")";
    }
  }
  EXPECT_EQ(plots, 2u);
}

// The same on a trace captured on an H200 (assets/traces, docs/gpu-validation.md).
TEST(GuiRunScreenshot, AGpuTraceOpensAtItsFirstDivergence) {
  test::TempDir dir;
  expect_first_divergence_framed(dir, std::filesystem::path(TS_ASSETS_DIR) / "traces/splitk_double_count_l.gpu.trace.safetensors");
}

// Runs the viewer on `trace` with `select` and each script, and checks the event each selects.
struct Step {
  std::string script;
  size_t want;
};
void expect_steps_select(test::TempDir& dir, const std::filesystem::path& trace, const std::string& select,
                         const std::vector<Step>& steps) {
  for (size_t k = 0; k < steps.size(); ++k) {
    SCOPED_TRACE("step " + std::to_string(k) + ": " + steps[k].script);
    const auto script = dir.path() / ("step" + std::to_string(k) + ".script");
    std::ofstream(script) << steps[k].script;
    const Shot s = run_screenshot(dir, "step" + std::to_string(k),
                                  {trace.string(), "--select", select, "--input-script", script.string(), "--frames", "10"});
    EXPECT_EQ(s.layout["selected_event"], steps[k].want);
    EXPECT_TRUE(s.layout["errors"].empty()) << s.layout["errors"];
  }
}

// A script line that clicks the centre of cell (row, col) of view `v`.
std::string click_cell(const nlohmann::json& v, double row, double col) {
  const double ox = v["origin"][0], oy = v["origin"][1], px = v["px_per_cell"][0], py = v["px_per_cell"][1];
  return "1 move " + std::to_string(std::floor(ox + (col + 0.5) * px)) + " " +
         std::to_string(std::floor(oy + (row + 0.5) * py)) + "\n2 down left\n3 up left\n";
}

TEST(GuiRunScreenshot, ClicksAndKeysSelectEventsInTheKernelsOrder) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "splitk.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::double_count_l), seed, trace);
  const RunView run = open_run(trace);
  const AnalysisReport report = analyze_run(run);
  auto index_of = [&](const std::string& stage, int32_t head, int32_t q_begin, int32_t split) -> size_t {
    for (size_t i = 0; i < run.num_events(); ++i) {
      const EventHeader& h = run.headers[i];
      if (run.stage_of(i).name == stage && h.head == head && h.q_begin == q_begin && h.split == split) return i;
    }
    ADD_FAILURE() << "no such event";
    return 0;
  };
  ASSERT_GE(run.stage_index("splitk.tile"), 0) << "the per-tile states are traced";
  const Shot before = run_screenshot(dir, "before", {trace.string(), "--select", "event:0"});
  const auto& grid = view_named(before.layout, "Error by query");
  const int32_t head0 = run.headers[0].head, block_m = run.tiling->block_m;
  // Home, three steps (a split's kv-tile state, then its partial, split by split), a click on
  // cell (query 12, split 2) of the error grid, then N from there, then Shift+N, each step read
  // back from a screenshot of its own.
  expect_steps_select(dir, trace, "event:0",
                      {{"1 key home\n", index_of("splitk.tile", 0, 0, 0)},
                       {"1 key home\n3 key rbracket\n5 key pagedown\n7 key rbracket\n", index_of("splitk.partial", 0, 0, 1)},
                       {"1 key home\n3 key rbracket\n5 key lbracket\n", index_of("splitk.tile", 0, 0, 0)},
                       {click_cell(grid, 12, 2), index_of("splitk.reduce", head0, 12 / block_m * block_m, 2)},
                       {"1 key home\n3 key n\n", static_cast<size_t>(report.first_divergence.event_index)},
                       {"1 key end\n3 key shift+n\n", static_cast<size_t>(report.first_divergence.event_index)}});
}

// Decode: a click on a random cell of the decode overview opens that pair's event at that key
// position (the one pair_overview_event names), whichever pair was shown before.
TEST(GuiRunScreenshot, ACellOfTheDecodeOverviewOpensItsPair) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "decode.trace.safetensors";
  test::capture_cpu(test::splitk_decode_gqa(Fault::double_count_l), seed, trace);
  const RunView run = open_run(trace);
  const AnalysisReport report = analyze_run(run);
  const PairOverview o = pair_overview(run, report);
  const Shot before = run_screenshot(dir, "before", {trace.string(), "--select", "event:0"});
  const auto& grid = view_named(before.layout, "Error by pair");
  std::mt19937_64 rng(seed);
  const int64_t row = static_cast<int64_t>(rng() % o.pairs.size()), col = static_cast<int64_t>(rng() % o.column_keys.size());
  SCOPED_TRACE("cell " + std::to_string(row) + ", " + std::to_string(col));
  const auto want = pair_overview_event(o, run, report, row, col);
  ASSERT_TRUE(want.has_value());
  EXPECT_EQ(std::pair(run.headers[*want].batch, run.headers[*want].head), o.pairs[static_cast<size_t>(row)]);
  expect_steps_select(dir, trace, "event:0", {{click_cell(grid, static_cast<double>(row), static_cast<double>(col)), *want}});
}

// Five stages side by side under the decode overview, at the README's 1600 x 900: each navigator
// gets room for its axes, its label and its cells. Weighted by key positions alone, the
// one-column stages got 31 pixels of image here, and in the README's larger decode a 16-pixel
// sliver with their labels clipped; now at least 60.
TEST(GuiRunScreenshot, EveryNavigatorOfTheDecodeOverviewHasRoomForItsCells) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "decode.trace.safetensors";
  test::capture_cpu(test::splitk_decode_gqa(Fault::double_count_l), seed, trace);
  const Shot shot = run_screenshot(dir, "navigators", {trace.string(), "--select", "first-divergence"}, "1600x900");
  std::vector<std::pair<double, double>> spans;  // each navigator image's [left, right)
  for (const auto& v : shot.layout["views"])
    if (v["name"].get<std::string>().rfind("Navigator ", 0) == 0)
      spans.emplace_back(v["image_min"][0].get<double>(), v["image_max"][0].get<double>());
  ASSERT_GE(spans.size(), 5u) << shot.layout["views"].dump();
  std::sort(spans.begin(), spans.end());
  for (size_t i = 0; i < spans.size(); ++i) {
    SCOPED_TRACE("navigator " + std::to_string(i));
    EXPECT_GE(spans[i].second - spans[i].first, 48.0) << spans[i].first << " - " << spans[i].second;
    if (i + 1 < spans.size()) {
      EXPECT_LE(spans[i].second, spans[i + 1].first);
    }
  }
  // The last one ends left of the detail panel's views.
  const auto& trace_view = view_named(shot.layout, "Trace");
  EXPECT_LT(spans.back().second, trace_view["image_min"][0].get<double>());
}

// A user's trace (write_trace; stages "my_partial", "merge", "epilogue" of its own, uneven key
// ranges, normalised base-2 LSE merges): the viewer lists its stages by their names, opens at the
// wrong merge with its cells framed and drawn from the trace and the reference, and clicks, keys
// and the navigator select the events the trace's own description says.
TEST(GuiRunScreenshot, AUsersStageTableIsShownByItsNames) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const test::UserStageTrace user = test::write_user_stage_trace(dir.path() / "user.trace.safetensors", seed);
  const RunView run = open_run(user.path);
  const RunReference ref(run);

  const Shot shot = run_screenshot(dir, "user", {user.path.string(), "--select", "first-divergence"});
  EXPECT_TRUE(shot.layout["errors"].empty()) << shot.layout["errors"];
  EXPECT_EQ(shot.layout["stages"], (std::vector<std::string>{"my_partial", "merge", "epilogue"}));
  EXPECT_EQ(shot.layout["grid"], "worst of my_partial + merge");
  EXPECT_EQ(shot.layout["selected_event"], user.wrong_merge);
  EXPECT_EQ(shot.layout["first_divergence_event"], user.wrong_merge);
  for (const char* stage : {"my_partial", "merge", "epilogue"})
    EXPECT_TRUE(has_view(shot.layout, std::string("Navigator ") + stage)) << stage;
  // The overview: 40 queries by the key positions 70, 200, 300; the wrong merge (queries 16-31,
  // keys up to 199) framed.
  const auto& grid = view_named(shot.layout, "Error by query");
  EXPECT_EQ(grid["rows"], 40);
  EXPECT_EQ(grid["cols"], 3);
  expect_frame(shot, grid, 16, 32, 1, 2);
  // The navigator of the merges: 3 row blocks by 3 key positions; the wrong one is row 1, column 1.
  const auto& merges = view_named(shot.layout, "Navigator merge");
  EXPECT_EQ(merges["rows"], 3);
  EXPECT_EQ(merges["cols"], 3);
  expect_frame(shot, merges, 1, 2, 1, 2);
  EXPECT_EQ(view_named(shot.layout, "Navigator epilogue")["cols"], 1);
  // The detail: the merge's O as stored (normalised) beside the reference's O/l.
  const Expected x = expected_detail(run, ref, user.wrong_merge);
  const auto t = check_cells(shot, view_named(shot.layout, "Trace"), x.trace, 1e-4);
  const auto r = check_cells(shot, view_named(shot.layout, "Reference"), x.reference, 1e-4);
  EXPECT_GT(t.cells, 200u);
  EXPECT_GT(r.cells, 200u);
  EXPECT_EQ(view_named(shot.layout, "Trace")["rows"], 16);

  const auto partial = [&](int32_t head, int32_t q_begin, int32_t split) {
    return user.index_of(test::kUserPartial, head, q_begin, split);
  };
  const std::string home = "1 key home\n";
  expect_steps_select(
      dir, user.path, "first-divergence",
      {// The overview of head 1: queries 36 and the keys up to 69 are row block 32-39's first split.
       {click_cell(grid, 36, 0), partial(1, 32, 0)},
       // Queries 20, keys up to 199: the partial passes, the merge there fails: the merge.
       {click_cell(grid, 20, 1), user.wrong_merge},
       // The merges' navigator, row block 32-39 after split 0.
       {click_cell(merges, 2, 0), user.index_of(test::kUserMerge, 1, 32, 0)},
       // The kernel's order, not the file's: every partial (pass 0) by block first; the fourth is
       // head 0's row block 16-31, split 0 (the file holds it after row block 0's merges).
       {home, partial(0, 0, 0)},
       {home + "3 key rbracket\n5 key rbracket\n7 key rbracket\n", partial(0, 16, 0)},
       // The last: pass 1, the last block (head 1, queries 32-39), its epilogue.
       {"1 key end\n", user.index_of(test::kUserEpilogue, 1, 32, -1)},
       {home + "3 key n\n", user.wrong_merge},
       {"1 key end\n3 key shift+n\n", user.wrong_merge}});
}

TEST(GuiRunScreenshot, ABShowsBothRunsAndTheirDifference) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const test::FaultAndFix ab = test::capture_fault_and_fix(dir.path(), seed);
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
  test::TempDir dir;
  const Shot shot = run_screenshot(dir, "demo", {"--demo", "--select", "first-divergence"});
  EXPECT_EQ(shot.layout["run"], "capture (cpu)");
  EXPECT_FALSE(shot.layout["selected_event"].is_null());
  EXPECT_EQ(shot.layout["selected_event"], shot.layout["first_divergence_event"]) << "double_count_l diverges";
  EXPECT_TRUE(has_view(shot.layout, "Trace"));
  EXPECT_TRUE(has_view(shot.layout, "Error by query"));
}

TEST(GuiRunScreenshot, ACorruptFileIsReportedInTheWindowAndTheViewerCarriesOn) {
  test::TempDir dir;
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
  test::TempDir dir;
  const Shot shot = run_screenshot(dir, "launch", {"--panel", "launch"});
  EXPECT_EQ(shot.layout["panel"], "launch");
  EXPECT_TRUE(shot.layout["views"].empty());
  EXPECT_TRUE(shot.layout["errors"].empty()) << shot.layout["errors"];
}

}  // namespace
}  // namespace ts
