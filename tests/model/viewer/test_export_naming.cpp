// The GUI export's folder names (app/model/viewer/export_naming.h): after the run and the
// selected event, safe as a file name, and never an existing path.
#include <gtest/gtest.h>

#include <fstream>

#include "app/model/viewer/export_naming.h"
#include "tests/support/temp_dir.h"

namespace ts {
namespace {

TEST(ExportNaming, NamedAfterTheRunAndTheEvent) {
  RunView run;
  run.stages = {{"splitk.partial", StageKind::state, 0}, {"my stage/2", StageKind::merge, 1}};
  EventHeader a{};
  a.stage = 0, a.batch = 1, a.head = 3, a.q_begin = 32, a.split = 2, a.step = 5;
  EventHeader b{};
  b.stage = 1, b.batch = 0, b.head = 0, b.q_begin = 0, b.split = -1, b.step = 4;
  run.headers = {a, b};
  EXPECT_EQ(export_folder_name("demo.trace.safetensors", &run, 0), "demo_splitk.partial_b1_h3_q32_s2");
  EXPECT_EQ(export_folder_name("demo.trace.safetensors", &run, 1), "demo_my_stage_2_b0_h0_q0_t4");
  EXPECT_EQ(export_folder_name("a b.safetensors", &run, std::nullopt), "a_b");
  EXPECT_EQ(export_folder_name("demo.trace.safetensors", &run, 7), "demo");  // past the events: the run only
}

TEST(ExportNaming, NeverAnExistingPath) {
  test::TempDir dir;
  const auto want = dir.path() / "x";
  EXPECT_EQ(unused_path(want), want);
  std::filesystem::create_directories(want);
  EXPECT_EQ(unused_path(want), dir.path() / "x-2");
  std::ofstream(dir.path() / "x-2") << "a file";
  EXPECT_EQ(unused_path(want), dir.path() / "x-3");
}

}  // namespace
}  // namespace ts
