// The viewer's command line: values, defaults, and usage errors that name the option.
#include <gtest/gtest.h>

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
  GuiOptionsResult r = parse({"--screenshot", "a.png", "--size", "800x600", "--demo-size", "8192x128",
                              "--demo-seed", "42", "--max-tile", "7", "--pick", "3,4", "--values-scale", "signed-log",
                              "--values-colormap", "gray", "--no-vsync"});
  ASSERT_TRUE(r.options) << r.output;
  const GuiOptions& o = *r.options;
  EXPECT_EQ(o.screenshot->string(), "a.png");
  EXPECT_EQ(o.frames, 3);
  EXPECT_TRUE(o.headless_run());
  EXPECT_EQ(o.width, 800);
  EXPECT_EQ(o.height, 600);
  EXPECT_EQ(o.demo_rows, 8192);
  EXPECT_EQ(o.demo_cols, 128);
  EXPECT_EQ(o.demo_seed, 42u);
  EXPECT_EQ(o.max_tile, 7);
  EXPECT_EQ(o.pick, (CellIndex{3, 4}));
  EXPECT_EQ(o.values_scale, "signed-log");
  EXPECT_EQ(o.values_colormap, ColormapId::gray);
  EXPECT_FALSE(o.vsync);
  r = parse({"--screenshot", "a.png", "--frames", "10"});
  EXPECT_EQ(r.options->frames, 10);
}

TEST(GuiOptions, UsageErrorsNameTheOption) {
  const std::vector<std::pair<std::vector<const char*>, const char*>> bad = {
      {{"--size", "800"}, "--size"},
      {{"--size", "10x10"}, "--size"},
      {{"--size", "800x600x2"}, "--size"},
      {{"--demo-size", "0x5"}, "--demo-size"},
      {{"--demo-size", "100000x100000"}, "--demo-size"},
      {{"--pick", "-1,2"}, "--pick"},
      {{"--pick", "1;2"}, "--pick"},
      {{"--values-colormap", "jet"}, "jet"},
      {{"--values-scale", "cubic"}, "--values-scale"},
      {{"--frames", "0"}, "--frames"},
      {{"--no-such-option"}, "--no-such-option"},
  };
  for (const auto& [args, mention] : bad) {
    const GuiOptionsResult r = parse(args);
    EXPECT_FALSE(r.options) << args[0];
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.output.find(mention), std::string::npos) << r.output;
  }
}

TEST(GuiOptions, HelpListsTheHeadlessModes) {
  const GuiOptionsResult r = parse({"--help"});
  EXPECT_FALSE(r.options);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt : {"--screenshot", "--frames", "--size", "--frame-stats"})
    EXPECT_NE(r.output.find(opt), std::string::npos) << opt;
}

}  // namespace
}  // namespace ts
