// Input scripts parse into events, and bad lines are refused with their line number.
#include <gtest/gtest.h>

#include "app/gui/input_script.h"

namespace ts {
namespace {

TEST(InputScript, ParsesEveryKindOfEvent) {
  const auto e = parse_input_script("# a click\n1 move 10.5 20\n2 down left\n\n3 up right  # comment\n4 wheel -1.5\n5 key f\n");
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].kind, InputEvent::Kind::move);
  EXPECT_EQ(e[0].x, 10.5f);
  EXPECT_EQ(e[0].y, 20.0f);
  EXPECT_EQ(e[1].kind, InputEvent::Kind::down);
  EXPECT_EQ(e[1].button, 0);
  EXPECT_EQ(e[2].kind, InputEvent::Kind::up);
  EXPECT_EQ(e[2].button, 1);
  EXPECT_EQ(e[3].steps, -1.5f);
  EXPECT_EQ(e[4].key, "f");
  EXPECT_EQ(e[4].frame, 5);
}

TEST(InputScript, BadLinesNameTheirNumber) {
  for (const char* bad : {"x move 1 2", "1 fly", "1 move 3", "1 down thumb", "1 key escape", "1 wheel", "-2 up left",
                          "1 move 1 2 3"}) {
    try {
      parse_input_script(std::string("0 move 1 1\n") + bad + "\n");
      FAIL() << bad;
    } catch (const InputScriptError& e) {
      EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_input_script("/nonexistent/script"), InputScriptError);
  EXPECT_THROW(load_input_script("/dev/zero"), InputScriptError);  // refused, not read forever
  EXPECT_THROW(parse_input_script("1 key ctrl+x\n"), InputScriptError);
}

TEST(InputScript, CtrlShortcutsOpenTheDialogs) {
  const auto e = parse_input_script("1 key ctrl+e\n3 key ctrl+o\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].key, "ctrl+e");
  EXPECT_EQ(e[1].key, "ctrl+o");
}

}  // namespace
}  // namespace ts
