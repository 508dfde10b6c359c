// The viewer's controller without a display: opening, comparing, launching, saving and
// exporting run as jobs whose results reach the session only through poll(); a newer request of
// a kind replaces a waiting one and cancels a running one for run A; errors, a bad --select and
// a refused output path come back as problems; the GPU check runs off the calling thread. The
// runs are captured at test time from the test's seed (viewer_fixtures.h).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "app/model/trace_session.h"
#include "app/model/viewer/viewer_controller.h"
#include "kernels/launcher.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

// Every update until the controller has nothing running or waiting, merged in order.
ControllerUpdate drain(ViewerController& c) {
  ControllerUpdate all;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  for (;;) {
    ControllerUpdate u = c.poll();
    for (auto& p : u.problems) all.problems.push_back(std::move(p));
    all.run_shown |= u.run_shown;
    all.shown_at_startup |= u.shown_at_startup;
    all.b_shown |= u.b_shown;
    if (u.startup) all.startup = u.startup;
    if (!c.busy()) return all;
    if (std::chrono::steady_clock::now() > give_up) {
      ADD_FAILURE() << "the controller's jobs did not end within two minutes";
      c.cancel();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string message_of(const std::exception_ptr& e) {
  try {
    if (e) std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
  return "(no exception)";
}

std::string problems_text(const ControllerUpdate& u) {
  std::string s;
  for (const auto& p : u.problems) s += p.where + ": " + message_of(p.error) + "\n";
  return s;
}

class ViewerControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fx_ = test::capture_fault_and_fix(dir_.path(), seed_);
    recent_ = std::make_unique<RecentFiles>(dir_.path() / "recent.json");
  }

  uint64_t seed_ = test::test_seed();
  ::testing::ScopedTrace trace_{__FILE__, __LINE__, test::replay_line(seed_)};
  test::TempDir dir_;
  test::FaultAndFix fx_;
  std::unique_ptr<RecentFiles> recent_;
};

TEST_F(ViewerControllerTest, ARunOpenedAtStartIsShownOnlyByPollWithItsSelection) {
  ViewerController c(*recent_);
  c.start({fx_.faulty, std::nullopt, false, SelectRequest{true, std::nullopt}});
  EXPECT_TRUE(c.busy());
  EXPECT_FALSE(c.session().has_run());  // nothing reaches the session but through poll()
  const ControllerUpdate u = drain(c);
  ASSERT_TRUE(u.problems.empty()) << problems_text(u);
  ASSERT_TRUE(c.session().has_run());
  EXPECT_TRUE(u.run_shown);
  EXPECT_TRUE(u.shown_at_startup);
  ASSERT_TRUE(u.startup.has_value());
  EXPECT_EQ(u.startup->state, JobState::succeeded);
  EXPECT_FALSE(u.startup->bad_select);
  EXPECT_EQ(c.session().run().path, fx_.faulty);
  // --select first-divergence: the fixture's own first divergence (found by its own analysis).
  EXPECT_EQ(c.session().selected(), fx_.first);
  ASSERT_FALSE(recent_->entries().empty());
  EXPECT_EQ(recent_->entries().front(), fx_.faulty);
}

TEST_F(ViewerControllerTest, AnEventPastTheRunsEndIsABadSelectAndTheRunStillShows) {
  ViewerController c(*recent_);
  const size_t past = fx_.a.num_events() + 5;
  c.start({fx_.faulty, std::nullopt, false, SelectRequest{false, past}});
  const ControllerUpdate u = drain(c);
  ASSERT_TRUE(u.startup.has_value());
  EXPECT_EQ(u.startup->state, JobState::succeeded);
  EXPECT_TRUE(u.startup->bad_select);
  ASSERT_EQ(u.problems.size(), 1u) << problems_text(u);
  EXPECT_EQ(u.problems[0].where, "--select");
  EXPECT_NE(message_of(u.problems[0].error).find(std::to_string(past)), std::string::npos)
      << message_of(u.problems[0].error);
  EXPECT_TRUE(c.session().has_run());
}

TEST_F(ViewerControllerTest, AFileThatCannotBeOpenedIsAProblemAndTheStartupFails) {
  ViewerController c(*recent_);
  const std::filesystem::path missing = dir_.path() / "no-such.trace.safetensors";
  c.start({missing, std::nullopt, false, std::nullopt});
  const ControllerUpdate u = drain(c);
  ASSERT_EQ(u.problems.size(), 1u) << problems_text(u);
  EXPECT_EQ(u.problems[0].where, "open no-such.trace.safetensors");
  EXPECT_NE(message_of(u.problems[0].error).find("no-such.trace.safetensors"), std::string::npos);
  ASSERT_TRUE(u.startup.has_value());
  EXPECT_EQ(u.startup->state, JobState::failed);
  EXPECT_FALSE(c.session().has_run());
  EXPECT_TRUE(recent_->entries().empty());
}

// Three opens in a row: the first is running and is cancelled by the second, which is still
// waiting when the third replaces it; only the third is shown, and the second (a file that does
// not exist) never runs, so it reports nothing.
TEST_F(ViewerControllerTest, ANewerOpenReplacesAWaitingOneAndCancelsARunningOne) {
  ViewerController c(*recent_);
  c.open(fx_.faulty, OpenTarget::a);
  ASSERT_TRUE(c.busy());
  c.open(dir_.path() / "missing.trace.safetensors", OpenTarget::a);
  c.open(fx_.fixed, OpenTarget::a);
  EXPECT_TRUE(c.cancel_requested());
  EXPECT_EQ(c.waiting(), std::vector<std::string>{"open fixed.trace.safetensors"});
  const ControllerUpdate u = drain(c);
  EXPECT_TRUE(u.problems.empty()) << problems_text(u);
  ASSERT_TRUE(c.session().has_run());
  EXPECT_EQ(c.session().run().path, fx_.fixed);
  EXPECT_FALSE(c.session().stepper().first_divergence_event().has_value());  // the fixed kernel
  ASSERT_EQ(recent_->entries().size(), 1u);
  EXPECT_EQ(recent_->entries().front(), fx_.fixed);
}

// Requests of other kinds wait their turn, in order; a comparison reads run A when it starts,
// so one asked for while A is still opening compares with that A.
TEST_F(ViewerControllerTest, AComparisonWaitingBehindAnOpenComparesWithTheRunItOpened) {
  ViewerController c(*recent_);
  c.open(fx_.faulty, OpenTarget::a);
  c.open(fx_.fixed, OpenTarget::b);
  EXPECT_FALSE(c.cancel_requested());
  const ControllerUpdate u = drain(c);
  ASSERT_TRUE(u.problems.empty()) << problems_text(u);
  EXPECT_TRUE(u.run_shown);
  EXPECT_TRUE(u.b_shown);
  ASSERT_TRUE(c.session().has_b());
  EXPECT_EQ(c.session().run().path, fx_.faulty);
  EXPECT_EQ(c.session().b().path, fx_.fixed);
  // The pairing: A's first divergence pairs with the same event of B.
  c.session().stepper().select(fx_.first);
  EXPECT_EQ(c.session().pairing().b_event_for(fx_.a.headers[fx_.first]), fx_.first_in_b);

  // Swapped: B becomes A and the report is B's against A's.
  c.swap_ab();
  const ControllerUpdate s = drain(c);
  ASSERT_TRUE(s.problems.empty()) << problems_text(s);
  EXPECT_EQ(c.session().run().path, fx_.fixed);
  EXPECT_EQ(c.session().b().path, fx_.faulty);
  EXPECT_EQ(c.session().selected(), fx_.first);  // the selection is kept across the swap
}

TEST_F(ViewerControllerTest, APairOpensAsAAndBAndAComparisonWithNoRunOpensAsTheRun) {
  {
    ViewerController c(*recent_);
    c.start({fx_.faulty, fx_.fixed, false, std::nullopt});
    const ControllerUpdate u = drain(c);
    ASSERT_TRUE(u.problems.empty()) << problems_text(u);
    EXPECT_FALSE(u.b_shown);  // the pair asked for at start: the window keeps --panel's tab
    ASSERT_TRUE(c.session().has_b());
    EXPECT_EQ(c.session().b().path, fx_.fixed);
  }
  ViewerController c(*recent_);
  c.open(fx_.fixed, OpenTarget::b);
  const ControllerUpdate u = drain(c);
  ASSERT_TRUE(u.problems.empty()) << problems_text(u);
  ASSERT_TRUE(c.session().has_run());
  EXPECT_FALSE(c.session().has_b());
  EXPECT_EQ(c.session().run().path, fx_.fixed);
}

// Saves queue behind the open; the second replaces the first while it waits, so only it is
// written, byte for byte the file that was opened.
TEST_F(ViewerControllerTest, ANewerSaveReplacesAWaitingOneAndWritesTheOpenedTrace) {
  ViewerController c(*recent_);
  c.open(fx_.faulty, OpenTarget::a);
  drain(c);
  c.open(fx_.fixed, OpenTarget::b);  // keeps the controller busy while the saves are asked for
  const std::filesystem::path first = dir_.path() / "first.trace.safetensors",
                              second = dir_.path() / "second.trace.safetensors";
  c.save_trace_as(first);
  c.save_trace_as(second);
  EXPECT_EQ(c.waiting(), std::vector<std::string>{"save trace as second.trace.safetensors"});
  const ControllerUpdate u = drain(c);
  ASSERT_TRUE(u.problems.empty()) << problems_text(u);
  EXPECT_FALSE(std::filesystem::exists(first));
  ASSERT_TRUE(std::filesystem::exists(second));
  auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(second), bytes(fx_.faulty));
  EXPECT_EQ(c.status(), "saved " + second.string());
}

TEST_F(ViewerControllerTest, AnExportRunsTheWindowsWriterOnTheWorkerThreadAndReportsItsCount) {
  ViewerController c(*recent_);
  const std::thread::id ui = std::this_thread::get_id();
  std::thread::id worker;
  c.export_files(dir_.path() / "out", [&worker](JobProgress&) {
    worker = std::this_thread::get_id();
    return size_t{7};
  });
  const ControllerUpdate u = drain(c);
  ASSERT_TRUE(u.problems.empty()) << problems_text(u);
  EXPECT_NE(worker, ui);
  EXPECT_NE(worker, std::thread::id{});
  EXPECT_EQ(c.status(), "exported 7 files to " + (dir_.path() / "out").string());

  // A writer that throws: the export's problem, with its message.
  c.export_files(dir_.path() / "bad", [](JobProgress&) -> size_t { throw std::runtime_error("disk full"); });
  const ControllerUpdate f = drain(c);
  ASSERT_EQ(f.problems.size(), 1u);
  EXPECT_EQ(message_of(f.problems[0].error), "disk full");
}

TEST_F(ViewerControllerTest, ALaunchToAnUnwritablePathIsRefusedBeforeAnythingRuns) {
  ViewerController c(*recent_);
  CaptureRequest r{test::cpu_spec(test::splitk_small(Fault::none), seed_), std::filesystem::path("/dev/null")};
  c.launch(r, false);
  EXPECT_FALSE(c.busy());
  const ControllerUpdate u = c.poll();
  ASSERT_EQ(u.problems.size(), 1u);
  EXPECT_NE(u.problems[0].where.find("capture on cpu"), std::string::npos) << u.problems[0].where;
  EXPECT_NE(message_of(u.problems[0].error).find("/dev/null"), std::string::npos) << message_of(u.problems[0].error);
}

// A launch compared as B with A: B is the capture, analysed, and paired with A.
TEST_F(ViewerControllerTest, ALaunchAsBIsComparedWithTheOpenRun) {
  ViewerController c(*recent_);
  c.open(fx_.faulty, OpenTarget::a);
  c.launch({test::cpu_spec(test::splitk_small(Fault::none), seed_), std::nullopt}, true);
  const ControllerUpdate u = drain(c);
  ASSERT_TRUE(u.problems.empty()) << problems_text(u);
  EXPECT_TRUE(u.b_shown);
  ASSERT_TRUE(c.session().has_b());
  EXPECT_FALSE(c.session().b().path.has_value());  // launched here, not saved
  EXPECT_EQ(c.session().b().backend, Backend::cpu);
  EXPECT_FALSE(c.session().b().report->first_divergence.found);
  EXPECT_EQ(c.session().pairing().b_event_for(fx_.a.headers[fx_.first]), fx_.first_in_b);
}

TEST_F(ViewerControllerTest, CancelStopsTheRunningJobAndForgetsTheWaitingOnes) {
  ViewerController c(*recent_);
  c.open(fx_.faulty, OpenTarget::a);
  c.save_trace_as(dir_.path() / "never.trace.safetensors");
  c.cancel();
  const ControllerUpdate u = drain(c);
  EXPECT_TRUE(u.problems.empty()) << problems_text(u);
  EXPECT_FALSE(c.session().has_run());
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "never.trace.safetensors"));
  EXPECT_EQ(c.status(), "open faulty.trace.safetensors: cancelled");
}

TEST(ViewerController, TheGpuCheckAnswersOffTheCallingThreadAsTheLauncherDoes) {
  const std::filesystem::path store = std::filesystem::temp_directory_path() / "tilescope-controller-gpu.json";
  RecentFiles recent(store);
  ViewerController c(recent);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!c.gpu_state() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(c.gpu_state().has_value());
  std::string why;
  const bool available = gpu_available(&why);
  EXPECT_EQ(c.gpu_state()->available, available);
  EXPECT_EQ(c.gpu_state()->why_not, why);
}

}  // namespace
}  // namespace ts
