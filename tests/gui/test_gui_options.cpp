// The viewer's command line: values, defaults, and usage errors that name the option.
#include <gtest/gtest.h>

#include <filesystem>

#include "app/gui/gui_options.h"

namespace ts {
namespace {

GuiOptionsResult parse(std::vector<const char*> args) {
  args.insert(args.begin(), "tilescope-gui");
  return parse_gui_options(static_cast<int>(args.size()), args.data());
}

TEST(GuiOptions, DefaultsRunInteractively) {
  const GuiOptionsResult r = parse({});
  ASSERT_TRUE(r.options);
  EXPECT_FALSE(r.options->headless_run());
  EXPECT_EQ(r.options->frames, 0);
  EXPECT_TRUE(r.options->vsync);
}

TEST(GuiOptions, ScreenshotModeRendersThreeFramesUnlessTold) {
  GuiOptionsResult r = parse({"--screenshot", "a.png", "--size", "800x600", "--synthetic", "8192x128",
                              "--synthetic-seed", "42", "--max-tile", "7", "--pick", "3,4", "--values-scale", "signed-log",
                              "--values-colormap", "gray", "--no-vsync"});
  ASSERT_TRUE(r.options) << r.output;
  const GuiOptions& o = *r.options;
  EXPECT_EQ(o.screenshot->string(), "a.png");
  EXPECT_EQ(o.frames, 3);
  EXPECT_TRUE(o.headless_run());
  EXPECT_EQ(o.width, 800);
  EXPECT_EQ(o.height, 600);
  EXPECT_EQ(o.synthetic_rows, 8192);
  EXPECT_EQ(o.synthetic_cols, 128);
  EXPECT_EQ(o.synthetic_seed, 42u);
  EXPECT_EQ(o.max_tile, 7);
  EXPECT_EQ(o.pick, (CellIndex{3, 4}));
  EXPECT_EQ(o.values_scale, "signed-log");
  EXPECT_EQ(o.values_colormap, ColormapId::gray);
  EXPECT_FALSE(o.vsync);
  EXPECT_TRUE(o.synthetic);
  r = parse({"--screenshot", "a.png", "--frames", "10"});
  EXPECT_EQ(r.options->frames, 10);
  EXPECT_FALSE(r.options->synthetic);
}

TEST(GuiOptions, ARunItsComparisonAndWhatToShow) {
  GuiOptionsResult r = parse({"a.trace.safetensors", "--against", "b.trace.safetensors", "--select", "event:12",
                              "--panel", "detail", "--recent-store", "/tmp/r.json", "--job-timeout", "30"});
  ASSERT_TRUE(r.options) << r.output;
  EXPECT_EQ(r.options->run, std::filesystem::path("a.trace.safetensors"));
  EXPECT_EQ(r.options->against, std::filesystem::path("b.trace.safetensors"));
  EXPECT_EQ(r.options->select, "event:12");
  EXPECT_EQ(r.options->panel, GuiPanel::detail);
  EXPECT_EQ(r.options->recent_store, std::filesystem::path("/tmp/r.json"));
  EXPECT_EQ(r.options->job_timeout_s, 30);
  EXPECT_FALSE(r.options->demo);
  EXPECT_FALSE(r.options->curves_over_group);
  r = parse({"a.trace.safetensors", "--curves", "group"});
  ASSERT_TRUE(r.options) << r.output;
  EXPECT_TRUE(r.options->curves_over_group);
  r = parse({"a.trace.safetensors", "--curves", "heads"});
  EXPECT_FALSE(r.options);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--curves"), std::string::npos) << r.output;
  r = parse({"--demo", "--select", "first-divergence"});
  ASSERT_TRUE(r.options) << r.output;
  EXPECT_TRUE(r.options->demo);
  EXPECT_FALSE(r.options->run.has_value());
  EXPECT_FALSE(r.options->panel.has_value()) << "chosen by what is open";
  for (const char* p : {"both", "overview", "detail", "launch", "ab", "synthetic"}) {
    r = parse({"--panel", p});
    ASSERT_TRUE(r.options) << p;
    EXPECT_EQ(to_string(*r.options->panel), p);
  }
}

TEST(GuiOptions, UsageErrorsNameTheOption) {
  const std::vector<std::pair<std::vector<const char*>, const char*>> bad = {
      {{"--size", "800"}, "--size"},
      {{"--size", "10x10"}, "--size"},
      {{"--size", "800x600x2"}, "--size"},
      {{"--synthetic", "0x5"}, "--synthetic"},
      {{"--synthetic", "100000x100000"}, "--synthetic"},
      {{"--synthetic", "16384x16384"}, "--synthetic"},  // was accepted, and took over 6 GB
      {{"--synthetic-seed", "-1"}, "--synthetic-seed"},  // was 2^64 - 1
      {{"--synthetic-seed", "18446744073709551616"}, "--synthetic-seed"},
      {{"--frames", "99999999999999999999"}, "--frames"},
      {{"--max-tile", "010x"}, "--max-tile"},
      {{"--pick", "-1,2"}, "--pick"},
      {{"--pick", "1;2"}, "--pick"},
      // Outside the synthetic heatmaps (was: clamped to their last cell, silently).
      {{"--synthetic", "4x6", "--pick", "4,0"}, "--pick 4,0 is outside the synthetic heatmaps' 4 x 6 cells: ROW 0-3, COL 0-5"},
      {{"--synthetic", "4x6", "--pick", "0,6"}, "ROW 0-3, COL 0-5"},
      {{"--panel", "synthetic", "--pick", "100000,100000"}, "96 x 64 cells: ROW 0-95, COL 0-63"},
      {{"--values-colormap", "jet"}, "jet"},
      {{"--values-scale", "cubic"}, "--values-scale"},
      {{"--frames", "0"}, "--frames"},
      {{"--select", "divergence"}, "--select"},
      {{"--select", "event:x"}, "event:x"},
      {{"--panel", "everything"}, "--panel"},
      {{"--against", "b.trace.safetensors"}, "--against"},
      {{"a.trace.safetensors", "--demo"}, "--demo"},
      {{"--demo", "--synthetic", "4x4"}, "--synthetic"},
      {{"a", "b", "c"}, "c"},
      {{"--no-such-option"}, "--no-such-option"},
  };
  for (const auto& [args, mention] : bad) {
    const GuiOptionsResult r = parse(args);
    EXPECT_FALSE(r.options) << args[0];
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.output.find(mention), std::string::npos) << r.output;
  }
}

// A folder named for an output file: the message suggests a name of what that option writes,
// not a trace file.
TEST(GuiOptions, AFolderForAnOutputFileSuggestsANameOfItsKind) {
  const std::filesystem::path folder = std::filesystem::temp_directory_path();
  for (const auto& [option, name] : {std::pair{"--screenshot", "screenshot.png"},
                                     std::pair{"--frame-stats", "frame-stats.json"},
                                     std::pair{"--layout-json", "layout.json"}}) {
    const GuiOptionsResult r = parse({"--synthetic", "4x4", option, folder.c_str()});
    EXPECT_FALSE(r.options) << option;
    EXPECT_EQ(r.exit_code, 2) << option;
    EXPECT_NE(r.output.find(std::string(option) + ": cannot write " + folder.string() + ": it is a folder"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("e.g. " + (folder / name).string()), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(".safetensors"), std::string::npos) << r.output;
  }
}

TEST(GuiOptions, HelpListsTheHeadlessModes) {
  const GuiOptionsResult r = parse({"--help"});
  EXPECT_FALSE(r.options);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt : {"--screenshot", "--frames", "--size", "--frame-stats", "--select", "--panel", "--demo",
                          "--against", "Shift+N"})
    EXPECT_NE(r.output.find(opt), std::string::npos) << opt;
}

}  // namespace
}  // namespace ts
