// printable(): what the programs show of text from files. Terminal controls, C1 controls,
// bidirectional overrides and invalid UTF-8 are written out as escapes; everything else,
// including valid non-ASCII text, is kept.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "instrumentation/trace/display_text.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

TEST(DisplayText, TerminalEscapesAreShownNotObeyed) {
  EXPECT_EQ(printable("gpu\x1b]0;pwned\x07"), "gpu\\x1b]0;pwned\\x07");  // sets the window title
  EXPECT_EQ(printable("\x1b[2J\x1b[H"), "\\x1b[2J\\x1b[H");                // clears the screen
  EXPECT_EQ(printable("a\rb\tc\nd\x7f"), "a\\rb\\tc\\nd\\x7f");
  EXPECT_EQ(printable("line 1\nline 2\x1b[1A", LineBreaks::keep), "line 1\nline 2\\x1b[1A");
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\u{009b}31m");  // C1 CSI
  EXPECT_EQ(printable("abc\xe2\x80\xae" "txt.exe"), "abc\\u{202e}txt.exe");  // right-to-left override
}

TEST(DisplayText, InvalidUtf8IsShownByteByByte) {
  EXPECT_EQ(printable("a\xff" "b"), "a\\xffb");
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");          // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(printable("end\xe2\x82"), "end\\xe2\\x82");     // cut short
}

TEST(DisplayText, OrdinaryTextIsKept) {
  for (const char* text : {"", "run.trace.safetensors", "NVIDIA H200 (sm_90)", "Größe 10 µs — ✓", "日本語",
                           "emoji \xf0\x9f\x98\x80"}) {
    EXPECT_EQ(printable(text), text);
    EXPECT_TRUE(is_printable(text));
  }
}

TEST(DisplayText, RandomBytesNeverComeOutWithAControlCharacter) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    const std::string p = printable(s);
    for (unsigned char c : p) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << int(c);
    EXPECT_TRUE(is_printable(p)) << p;
    EXPECT_EQ(printable(p), p);  // escaping is done once
  }
}

}  // namespace
}  // namespace ts
