// Without a display the viewer says what to do and exits non-zero; it never crashes.
#include <gtest/gtest.h>

#include "tests/gui/gui_process.h"

namespace ts {
namespace {

TEST(GuiNoDisplay, ExitsWithAClearMessage) {
  const test::ProcessResult r = test::run_gui({}, /*with_display=*/false);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("no display: run under xvfb-run, or use the tilescope CLI"), std::string::npos) << r.output;
}

TEST(GuiNoDisplay, ScreenshotModeToo) {
  const test::ProcessResult r = test::run_gui({"--screenshot", "/tmp/never-written.png"}, false);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("no display"), std::string::npos) << r.output;
}

TEST(GuiNoDisplay, BadOptionsAreUsageErrors) {
  const test::ProcessResult r = test::run_gui({"--size", "12"}, false);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--size"), std::string::npos) << r.output;
  const test::ProcessResult help = test::run_gui({"--help"}, false);
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("--screenshot"), std::string::npos) << help.output;
}

}  // namespace
}  // namespace ts
