// The viewer's error paths on a real trace, under Xvfb: an error thrown inside every panel (in
// the middle of a table, a popup or a child, with IDs, styles and fonts pushed: --inject-error
// PANEL:MESSAGE) is shown in the error panel, ImGui's stacks come back balanced, and the viewer
// goes on drawing; a headless run whose trace cannot be opened exits as the CLI would; the
// files a headless run writes obey the one rule for outputs.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "app/gui/error_injection.h"
#include "tests/gui/screenshot_run.h"

namespace ts {
namespace {

const std::string kTrace = std::string(TS_ASSETS_DIR) + "/traces/splitk_double_count_l.gpu.trace.safetensors";
constexpr Rgba8 kErrorPanel{52, 24, 26, 255};

size_t error_panel_pixels(const RgbaImage& img) {
  return static_cast<size_t>(std::count(img.pixels.begin(), img.pixels.end(), kErrorPanel));
}

struct Recovery {
  std::vector<std::string> args;            // what to show (a run, a panel, keys)
  std::vector<std::string> panels;          // an error aimed at each
};

TEST(GuiErrorRecovery, AnErrorInEveryPanelOfARealTraceIsShownAndTheViewerCarriesOn) {
  // Was: an error in the detail panel of a real trace left ImGui's ID stack unbalanced, and
  // ImGui's PopID assertion aborted the viewer in its own error recovery.
  test::TempDir dir;
  const auto keys = [&](const std::string& key) {
    const auto path = dir.path() / (key + ".keys");
    std::ofstream(path) << "2 key " << key << "\n";
    return path.string();
  };
  const std::vector<Recovery> runs = {
      {{kTrace, "--panel", "both"}, {"viewer", "menu", "header", "overview", "detail", "stepping", "status"}},
      {{kTrace, "--against", kTrace, "--panel", "ab"}, {"ab"}},
      {{kTrace, "--panel", "timeline"}, {"timeline"}},
      {{"--panel", "launch"}, {"launch"}},
      {{"--panel", "both"}, {"welcome"}},
      {{"--synthetic", "40x30"}, {"synthetic"}},
      {{kTrace, "--input-script", keys("ctrl+o")}, {"open-dialog"}},
      {{kTrace, "--input-script", keys("ctrl+e")}, {"export-dialog"}},
      {{kTrace, "--input-script", keys("ctrl+s")}, {"save-dialog"}},
      {{kTrace, "--input-script", keys("ctrl+h")}, {"help"}},
  };
  std::vector<std::string> covered;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Recovery& run = runs[i];
    SCOPED_TRACE(::testing::PrintToString(run.args));
    const auto png = dir.path() / ("run" + std::to_string(i) + ".png");
    std::vector<std::string> args = {"--screenshot", png.string(), "--frames", "8", "--size", "1400x860",
                                     "--recent-store", (dir.path() / "recent.json").string()};
    args.insert(args.end(), run.args.begin(), run.args.end());
    for (const std::string& panel : run.panels) args.insert(args.end(), {"--inject-error", panel + ":injected in " + panel});
    const test::ProcessResult r = test::run_gui(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const std::string& panel : run.panels) {
      EXPECT_NE(r.output.find("injected in " + panel), std::string::npos) << panel << " never threw:\n" << r.output;
      covered.push_back(panel);
    }
    EXPECT_GT(error_panel_pixels(test::load_png(png)), 10000u) << "the error panel is drawn";
  }
  // Every panel that can be aimed at was.
  for (std::string_view panel : kInjectionPanels)
    EXPECT_NE(std::find(covered.begin(), covered.end(), panel), covered.end()) << panel;
}

TEST(GuiErrorRecovery, TheNextFramesDrawTheRunAsUsual) {
  test::TempDir dir;
  const test::Shot shot = test::run_screenshot(
      dir, "after", {kTrace, "--panel", "both", "--inject-error", "detail:once", "--inject-error", "overview:once"});
  for (const char* view : {"Trace", "Reference", "Diff (trace - reference)"})
    EXPECT_NO_THROW(test::view_named(shot.layout, view)) << view;
}

TEST(GuiHeadless, ARunThatCannotBeOpenedExitsAsTheCliWould) {
  // Was: exit 0 with a screenshot of the error panel.
  test::TempDir dir;
  std::ifstream in(kTrace, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto cut = dir.path() / "cut.trace.safetensors";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  for (const std::vector<std::string>& what :
       {std::vector<std::string>{cut.string()}, std::vector<std::string>{(dir.path() / "missing.trace").string()},
        std::vector<std::string>{kTrace, "--against", cut.string()}}) {
    std::vector<std::string> args = {"--screenshot", (dir.path() / "shot.png").string(), "--recent-store",
                                     (dir.path() / "recent.json").string()};
    args.insert(args.end(), what.begin(), what.end());
    const test::ProcessResult r = test::run_gui(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(what.back()), std::string::npos) << r.output;
  }
}

TEST(GuiHeadless, APickOutsideTheShownEventIsABadArgumentThatNamesTheRange) {
  // Was: --pick 100000,100000 was clamped to the event's last cell, silently.
  test::TempDir dir;
  const test::Shot in_range = test::run_screenshot(dir, "in", {kTrace, "--panel", "detail", "--pick", "0,0"});
  const nlohmann::json& view = test::view_named(in_range.layout, "Trace");
  const int64_t rows = view["rows"], cols = view["cols"];
  const std::string last = std::to_string(rows - 1) + "," + std::to_string(cols - 1);
  const test::Shot edge = test::run_screenshot(dir, "edge", {kTrace, "--panel", "detail", "--pick", last});
  EXPECT_EQ(test::view_named(edge.layout, "Trace")["picked"], (nlohmann::json{rows - 1, cols - 1}));
  EXPECT_TRUE(edge.layout["errors"].empty()) << edge.layout["errors"].dump();

  const std::string range = " is outside the shown event's " + std::to_string(rows) + " x " + std::to_string(cols) +
                            " cells: ROW 0-" + std::to_string(rows - 1) + ", COL 0-" + std::to_string(cols - 1);
  for (const std::string& pick : {std::string("100000,100000"), std::to_string(rows) + ",0", "0," + std::to_string(cols)}) {
    const test::Shot bad = test::run_screenshot(dir, "bad", {kTrace, "--panel", "detail", "--pick", pick}, "1600x1000", 2);
    ASSERT_EQ(bad.layout["errors"].size(), 1u) << bad.layout["errors"].dump();
    EXPECT_NE(bad.layout["errors"][0].get<std::string>().find("--pick " + pick + range), std::string::npos)
        << bad.layout["errors"].dump();
    EXPECT_GT(error_panel_pixels(bad.image), 0u) << "shown in the error panel";
  }
}

TEST(GuiHeadless, OutputsOntoFifosDeviceLinksOrTheTraceAreRefused) {
  // Was: the screenshot replaced a FIFO (or, as root, a device) with a PNG and exited 0.
  test::TempDir dir;
  const auto fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/null", dir.path() / "null_link");
  const auto trace_copy = dir.path() / "run.trace.safetensors";
  std::filesystem::copy_file(kTrace, trace_copy);
  const auto before = std::filesystem::file_size(trace_copy);
  for (const char* option : {"--screenshot", "--layout-json", "--frame-stats"})
    for (const std::filesystem::path& target : {fifo, dir.path() / "null_link", trace_copy}) {
      const test::ProcessResult r =
          test::run_gui({trace_copy.string(), option, target.string(), "--frames", "2"});
      EXPECT_EQ(r.exit_code, 2) << option << " " << target << ": " << r.output;
      EXPECT_NE(r.output.find(option), std::string::npos) << r.output;
    }
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(std::filesystem::is_symlink(dir.path() / "null_link"));
  EXPECT_EQ(std::filesystem::file_size(trace_copy), before);
}

}  // namespace
}  // namespace ts
