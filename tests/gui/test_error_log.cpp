// The error log behind the error panel: entries, repeats, dismissal, guarded().
#include <gtest/gtest.h>

#include <stdexcept>

#include "app/gui/error_log.h"

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

}  // namespace
}  // namespace ts
