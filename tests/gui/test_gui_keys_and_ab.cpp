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
