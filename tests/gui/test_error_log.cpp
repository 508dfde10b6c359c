// The error log behind the error panel: entries, repeats, dismissal, guarded().
#include <gtest/gtest.h>

#include <stdexcept>

#include "app/gui/error_log.h"
#include "app/model/capture/capture_check.h"
#include "app/model/capture/capture_error.h"
#include "app/model/viewer/launch_form.h"
#include "instrumentation/trace/file_error.h"

namespace ts {
namespace {

TEST(ErrorLog, CollectsCountsRepeatsAndDismisses) {
  ErrorLog log;
  EXPECT_TRUE(log.empty());
  log.report("open trace", "x.trace.safetensors: header length 99999999 exceeds the file");
  log.report("open trace", "x.trace.safetensors: header length 99999999 exceeds the file");
  log.report("export PNG", "cannot write /ro/a.png: Permission denied");
  ASSERT_EQ(log.entries().size(), 2u);
  EXPECT_EQ(log.entries()[0].repeats, 2);
  log.dismiss(0);
  ASSERT_EQ(log.entries().size(), 1u);
  EXPECT_EQ(log.entries()[0].where, "export PNG");
  log.dismiss(5);  // out of range: nothing
  EXPECT_EQ(log.entries().size(), 1u);
  log.clear();
  EXPECT_TRUE(log.empty());
}

TEST(ErrorLog, GuardedTurnsExceptionsIntoEntries) {
  ErrorLog log;
  bool ran = false;
  EXPECT_TRUE(guarded(log, "fine", [&] { ran = true; }));
  EXPECT_TRUE(ran);
  EXPECT_FALSE(guarded(log, "launch", [] { throw std::runtime_error("no CUDA device: use --backend cpu"); }));
  EXPECT_FALSE(guarded(log, "odd", [] { throw 42; }));
  ASSERT_EQ(log.entries().size(), 2u);
  EXPECT_EQ(log.entries()[0].message, "no CUDA device: use --backend cpu");
  EXPECT_EQ(log.entries()[1].message, "unknown error");
}

TEST(ErrorLog, MessagesAreShownEscapedAndCarryTheCliExitCode) {
  // Messages quote file names and contents: the error panel shows escape sequences written out.
  ErrorLog log;
  log.report("open \x1b[2J", "evil\x1b]0;title\x07.trace.safetensors: bad\nsecond line\xff");
  ASSERT_EQ(log.entries().size(), 1u);
  EXPECT_EQ(log.entries()[0].where, "open \\x1b[2J");
  EXPECT_EQ(log.entries()[0].message, "evil\\x1b]0;title\\x07.trace.safetensors: bad\nsecond line\\xff");
  EXPECT_FALSE(guarded(log, "open", [] { throw FileReadError("x", "x: missing"); }));
  EXPECT_FALSE(guarded(log, "draw", [] { throw std::runtime_error("a bug"); }));
  EXPECT_EQ(log.entries()[1].exit_code, 2);
  EXPECT_EQ(log.entries()[2].exit_code, 3);
  // A file error's line break is the file's (a tensor name): escaped, as the CLI shows it; it
  // was kept, and the name's "second line" read as a line of its own.
  EXPECT_FALSE(guarded(log, "open", [] { throw TraceFormatError("x", "x: tensor 'a\nverdict: clean': bad"); }));
  EXPECT_EQ(log.entries()[3].message, "x: tensor 'a\\nverdict: clean': bad");
}

// A capture request's problem that reaches the log (a re-run the form did not check) names its
// field as the launch form labels it, as the form itself would.
TEST(ErrorLog, CaptureProblemsNameTheFormsLabel) {
  ErrorLog log;
  CaptureSpec spec;
  spec.trace.capacity_events = -3;
  EXPECT_FALSE(guarded(log, "re-run", [&] { check_capture(spec); }));
  ASSERT_EQ(log.entries().size(), 1u);
  const std::vector<CaptureProblem> problems = capture_problems(spec);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(log.entries()[0].message, problem_text(problems[0]));
  EXPECT_EQ(log.entries()[0].message.rfind("capacity (Trace): ", 0), 0u) << log.entries()[0].message;
  EXPECT_EQ(log.entries()[0].exit_code, 2) << "bad input";
}

}  // namespace
}  // namespace ts
