// The interactions end to end: tilescope-gui runs with scripted mouse and keys
// (--input-script), and its layout report says what the views did: a click picks the cell
// under the cursor in every linked view, arrow keys move the pick, the wheel zooms around
// the cursor, a drag pans without picking.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include "tests/gui/screenshot_run.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::screenshot;
using test::Shot;
using test::view_named;

struct Geometry {
  double ox, oy, px, py;  // cell (0, 0) and cell size of the Trace view
  double x(double col) const { return ox + col * px; }
  double y(double row) const { return oy + row * py; }
};

Geometry trace_geometry(const Shot& s) {
  const auto& v = view_named(s.layout, "Trace");
  return {v["origin"][0], v["origin"][1], v["px_per_cell"][0], v["px_per_cell"][1]};
}

Shot run_script(const test::TempDir& dir, const std::string& name, const std::string& script, int frames) {
  const auto path = dir.path() / (name + ".script");
  std::ofstream(path) << script;
  return screenshot(dir, name, 3, "37x29", {"--input-script", path.string(), "--frames", std::to_string(frames)});
}

std::string move(double x, double y) { return std::to_string(x) + " " + std::to_string(y); }

TEST(GuiInteraction, ClickPicksTheCellUnderTheCursorAndArrowKeysMoveIt) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  const Geometry g = trace_geometry(screenshot(dir, "before", 3, "37x29"));
  // Click at a random point of the Trace view (ImGui floors the mouse to whole pixels); the
  // cell under it, worked out here from the layout, must be picked.
  std::uniform_real_distribution<double> where_col(0, 28), where_row(2, 37);
  const double x = std::floor(g.x(where_col(rng))), y = std::floor(g.y(where_row(rng)));
  const auto col = static_cast<int>(std::floor((x - g.ox) / g.px)), row = static_cast<int>(std::floor((y - g.oy) / g.py));
  ASSERT_GE(row, 1);
  const std::string script =
      "1 move " + move(x, y) + "\n2 down left\n3 up left\n5 key right\n6 key up\n8 key up\n";
  const Shot after = run_script(dir, "click", script, 10);
  for (const auto& v : after.layout["views"]) {  // linked: the same cell in every view
    ASSERT_FALSE(v["picked"].is_null()) << v["name"];
    EXPECT_EQ(v["picked"][0], std::max(row - 2, 0)) << v["name"] << " clicked row " << row;
    EXPECT_EQ(v["picked"][1], col + 1) << v["name"] << " clicked col " << col;
  }
}

TEST(GuiInteraction, WheelZoomsAroundTheCursorInEveryView) {
  test::TempDir dir;
  const Shot before = screenshot(dir, "before", 3, "37x29");
  const Geometry g = trace_geometry(before);
  // The cursor over cell (21, 9), on a whole pixel (ImGui floors the mouse position).
  const double cx = std::floor(g.x(9.3)), cy = std::floor(g.y(21.6));
  const Shot after = run_script(dir, "wheel", "1 move " + move(cx, cy) + "\n2 wheel 2\n", 5);
  const Geometry z = trace_geometry(after);
  EXPECT_NEAR(z.px, g.px * 1.5625, 1e-6) << "two wheel steps of 1.25";
  EXPECT_NEAR(z.py, g.py * 1.5625, 1e-6);
  EXPECT_NEAR((cx - z.ox) / z.px, (cx - g.ox) / g.px, 1e-6) << "the point under the cursor stays on the same cell";
  EXPECT_NEAR((cy - z.oy) / z.py, (cy - g.oy) / g.py, 1e-6);
  // Linked: the other views zoomed the same way.
  for (const char* name : {"Reference", "Diff (trace - reference)"})
    EXPECT_EQ(view_named(after.layout, name)["px_per_cell"], view_named(after.layout, "Trace")["px_per_cell"]);
}

TEST(GuiInteraction, DragPansAndDoesNotPick) {
  test::TempDir dir;
  const Geometry g = trace_geometry(screenshot(dir, "before", 3, "37x29"));
  const double x = g.x(10.5), y = g.y(10.5);
  const std::string script = "1 move " + move(x, y) + "\n2 down left\n3 move " + move(x + 40, y + 30) + "\n4 move " +
                             move(x + 80, y + 60) + "\n5 up left\n";
  const Shot after = run_script(dir, "drag", script, 8);
  const Geometry p = trace_geometry(after);
  EXPECT_NEAR(p.ox - g.ox, 80, 1e-6);
  EXPECT_NEAR(p.oy - g.oy, 60, 1e-6);
  EXPECT_TRUE(view_named(after.layout, "Trace")["picked"].is_null()) << "a drag is not a click";
}

TEST(GuiInteraction, ABadScriptIsAUsageError) {
  test::TempDir dir;
  const auto path = dir.path() / "bad.script";
  std::ofstream(path) << "1 move 10 10\n2 jump\n";
  const test::ProcessResult r = test::run_gui({"--input-script", path.string(), "--frames", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("line 2"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ts
