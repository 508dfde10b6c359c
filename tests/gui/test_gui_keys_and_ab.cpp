// What the audit of the viewer fixed, checked on real runs through the screenshot mode: arrow
// keys move the detail's picked cell as soon as a run opens (no click needed first), and the
// A/B panel steps through events in the kernels' order and starts with the cell where A and B
// differ most picked (so its readout shows a difference, not dashes), kept while stepping; two
// recent traces of one name in different folders are told apart on the welcome page and each
// opens when clicked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/trace_session.h"
#include "app/model/viewer/ab_pairing.h"
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

// O/l of event i from the trace's payload (the A/B panel compares O/l by default).
std::vector<double> o_norm(const RunView& run, size_t i) {
  const RunEvent e = run.event(i);
  std::vector<double> out;
  const bool norm = (e.header.convention & kNormalized) != 0;
  for (int32_t r = 0; r < e.header.rows; ++r)
    for (int32_t c = 0; c < run.head_dim; ++c) {
      const double o = e.o[static_cast<size_t>(r * run.head_dim + c)], l = e.l[static_cast<size_t>(r)];
      out.push_back(norm ? o : o / l);
    }
  return out;
}

TEST(GuiKeysAndAB, ArrowKeysMoveTheDetailPickWithoutAClickFirst) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto trace = dir.path() / "splitk.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::double_count_l), seed, trace);
  const Shot before = run_screenshot(dir, "before", {trace.string(), "--select", "first-divergence"});
  const auto& p0 = view_named(before.layout, "Trace")["picked"];
  ASSERT_FALSE(p0.is_null()) << "the detail starts with its worst cell picked";
  const int64_t row = p0[0], col = p0[1];
  const int64_t rows = view_named(before.layout, "Trace")["rows"];
  // Keys that move the pick whatever cell the seed made the worst one.
  const bool left = col > 0, up = row > 0;
  ASSERT_GT(rows, 1);
  const auto script = dir.path() / "keys.script";
  std::ofstream(script) << "2 key " << (left ? "left" : "right") << "\n4 key " << (up ? "up" : "down") << "\n";
  const Shot after = run_screenshot(dir, "after", {trace.string(), "--select", "first-divergence", "--input-script",
                                                    script.string(), "--frames", "8"});
  for (const char* name : {"Trace", "Reference", "Diff (trace - reference)"}) {
    const auto& p = view_named(after.layout, name)["picked"];
    ASSERT_FALSE(p.is_null()) << name;
    EXPECT_EQ(p[0], row + (up ? -1 : 1)) << name;
    EXPECT_EQ(p[1], col + (left ? -1 : 1)) << name;
  }
}

TEST(GuiKeysAndAB, ABStepsInTheKernelsOrderAndPicksTheLargestDifference) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const test::FaultAndFix ab = test::capture_fault_and_fix(dir.path(), seed);
  const RunView &a = ab.a, &b = ab.b;
  const size_t first = ab.first;
  const std::vector<size_t> order = kernel_order(a.headers, a.stages);
  const size_t at = static_cast<size_t>(std::find(order.begin(), order.end(), first) - order.begin());
  ASSERT_LT(at + 1, order.size());
  const size_t next = order[at + 1];

  const auto script = dir.path() / "step.script";
  std::ofstream(script) << "2 key rbracket\n";
  const Shot shot = run_screenshot(dir, "ab", {ab.faulty.string(), "--against", ab.fixed.string(), "--select",
                                               "first-divergence", "--panel", "ab", "--input-script",
                                               script.string(), "--frames", "8"});
  EXPECT_EQ(shot.layout["panel"], "ab");
  EXPECT_EQ(shot.layout["selected_event"], next) << "] steps to the next event in the kernels' order";
  // The cell picked when A/B opened is where |A - B| of the event shown then (the first
  // divergence) is largest, worked out here from both trace files; stepping keeps it, so the
  // same cell can be watched from event to event.
  const std::vector<double> va = o_norm(a, first), vb = o_norm(b, ab.first_in_b);
  ASSERT_EQ(va.size(), vb.size());
  size_t worst = 0;
  for (size_t k = 1; k < va.size(); ++k)
    if (std::abs(va[k] - vb[k]) > std::abs(va[worst] - vb[worst])) worst = k;
  ASSERT_GT(std::abs(va[worst] - vb[worst]), 1e-3) << "double_count_l makes A and B differ here";
  const auto& picked = view_named(shot.layout, "A - B")["picked"];
  ASSERT_FALSE(picked.is_null());
  EXPECT_EQ(picked[0], static_cast<int64_t>(worst) / a.head_dim);
  EXPECT_EQ(picked[1], static_cast<int64_t>(worst) % a.head_dim);
}

TEST(GuiKeysAndAB, ABOpensWhereTheRunsDifferAndStepsFromDifferenceToDifference) {
  // Was: with A the clean run and B the faulty one, the A/B panel opened on event 0, where
  // A - B is zero, and its only jumps (next failing, first divergence) followed A, which has
  // none: nothing led to where A and B differ.
  TS_SEEDED(seed);
  test::TempDir dir;
  const test::FaultAndFix ab = test::capture_fault_and_fix(dir.path(), seed);
  const RunView &a = ab.b, &b = ab.a;  // A: the fixed run; B: the faulty one
  // Every event of A in the kernel's order and its largest |O/l A - O/l B|, from the trace files;
  // the faulty merge's O/l is l times too large, the fixed and faulty partials bit for bit equal.
  std::vector<size_t> differing;
  for (size_t e : kernel_order(a.headers, a.stages)) {
    size_t in_b = 0;
    while (in_b < b.num_events() && paired_identity(b.headers[in_b]) != paired_identity(a.headers[e])) ++in_b;
    ASSERT_LT(in_b, b.num_events()) << "event " << e << " of A has no pair in B";
    const std::vector<double> va = o_norm(a, e), vb = o_norm(b, in_b);
    double worst = 0;
    for (size_t k = 0; k < va.size(); ++k) worst = std::max(worst, std::abs(va[k] - vb[k]));
    if (worst > 1e-3) differing.push_back(e);
  }
  ASSERT_GE(differing.size(), 3u);
  ASSERT_NE(differing.front(), kernel_order(a.headers, a.stages).front()) << "the runs agree at first";

  const std::vector<std::string> args = {ab.fixed.string(), "--against", ab.faulty.string(), "--panel", "ab"};
  const Shot opened = run_screenshot(dir, "ab-opened", args);
  EXPECT_EQ(opened.layout["panel"], "ab");
  EXPECT_TRUE(opened.layout["first_divergence_event"].is_null()) << "A is the clean run";
  EXPECT_EQ(opened.layout["selected_event"], differing.front()) << "opens on the first event where A and B differ";
  // ...and shows it: A - B drawn from the two trace files' values there.
  size_t first_in_b = 0;
  while (paired_identity(b.headers[first_in_b]) != paired_identity(a.headers[differing.front()])) ++first_in_b;
  const std::vector<double> va = o_norm(a, differing.front()), vb = o_norm(b, first_in_b);
  FloatGrid diff{{}, a.headers[differing.front()].rows, a.head_dim, {}};
  for (size_t k = 0; k < va.size(); ++k) diff.values.push_back(static_cast<float>(va[k] - vb[k]));
  test::check_cells(opened, view_named(opened.layout, "A - B"), diff, 1e-3);

  // D: the next difference; D again, then Shift+D: back to the second.
  const auto script = dir.path() / "differences.script";
  std::ofstream(script) << "2 key d\n4 key d\n6 key shift+d\n";
  std::vector<std::string> stepping = args;
  for (const char* s : {"--input-script", script.c_str(), "--frames", "10"}) stepping.push_back(s);
  const Shot stepped = run_screenshot(dir, "ab-stepped", stepping);
  EXPECT_EQ(stepped.layout["selected_event"], differing[1]);
}

TEST(GuiKeysAndAB, RunsOnDifferentInputsAreNotShownSideBySide) {
  // Was: two runs of different seeds were "not compared" in the report, yet the A/B panel drew
  // A | B | A - B of their first events (a difference that is the inputs', not the kernels'), its
  // "compared" row reading ": 0 events, 0 differ".
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto a = dir.path() / "a.trace.safetensors", b = dir.path() / "b.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::none), seed, a);
  test::capture_cpu(test::splitk_small(Fault::none), seed + 1, b);
  const Shot shot = run_screenshot(dir, "inputs", {a.string(), "--against", b.string(), "--panel", "ab"});
  EXPECT_EQ(shot.layout["panel"], "ab");
  EXPECT_FALSE(shot.layout["run_b"].is_null()) << "B is open";
  EXPECT_TRUE(shot.layout["views"].empty()) << shot.layout["views"].dump();
  // Its verdict, in the header and the panel: not compared, never a divergence.
  EXPECT_EQ(shot.layout["ab_verdict"], "NOT COMPARED: the runs' inputs differ");
}

TEST(GuiKeysAndAB, RecentTracesOfOneNameInTwoFoldersAreToldApartAndEachOpens) {
  // Was: the welcome page listed both as "run.trace.safetensors" under one ImGui ID, and a click
  // on the second opened nothing.
  test::TempDir dir;
  const std::string traces = std::string(TS_ASSETS_DIR) + "/traces/";
  const auto a = dir.path() / "a" / "run.trace.safetensors", b = dir.path() / "b" / "run.trace.safetensors";
  std::filesystem::create_directories(a.parent_path());
  std::filesystem::create_directories(b.parent_path());
  std::filesystem::copy_file(traces + "fa1_causal_fp16.gpu.trace.safetensors", a);
  std::filesystem::copy_file(traces + "splitk_double_count_l.gpu.trace.safetensors", b);
  const auto store = dir.path() / "recent.json";
  std::ofstream(store) << nlohmann::json{{"recent", {a.string(), b.string()}}}.dump();

  const auto welcome = dir.path() / "welcome.json";
  test::ProcessResult r = test::run_gui({"--panel", "both", "--recent-store", store.string(), "--layout-json",
                                         welcome.string(), "--frames", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json rows = test::load_json(welcome)["recent"];
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0]["name"], rows[1]["name"]);
  EXPECT_NE(rows[0]["folder"], rows[1]["folder"]) << "the page shows which folder each is in";

  // Click the second name; the viewer opens b, which the store then lists first.
  const nlohmann::json& rect = rows[1]["rect"];
  const double x = (rect[0].get<double>() + rect[2].get<double>()) / 2;
  const double y = (rect[1].get<double>() + rect[3].get<double>()) / 2;
  const auto script = dir.path() / "click.script";
  std::ofstream(script) << "3 move " << x << " " << y << "\n4 down left\n5 up left\n";
  const auto after = dir.path() / "after.json";
  r = test::run_gui({"--panel", "both", "--recent-store", store.string(), "--input-script", script.string(),
                     "--layout-json", after.string(), "--frames", "400"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(test::load_json(after)["run"].is_null()) << "the click opened nothing";
  const nlohmann::json listed = test::load_json(store)["recent"];
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(listed[0].get<std::string>(), b.string()) << listed.dump();
}

}  // namespace
}  // namespace ts
