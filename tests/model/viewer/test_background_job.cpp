// The viewer's worker-thread jobs: the state machine (idle -> running -> succeeded / failed /
// cancelled), progress seen from the UI thread while the work runs, cancellation, one job at a
// time, and the result or error handed over exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "app/model/viewer/background_job.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

// A gate the test opens to let the work go on (so that the test sees it mid-run).
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void release() {
    {
      const std::lock_guard<std::mutex> l(m);
      open = true;
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return open; });
  }
};

// Polls like the UI does, once a "frame", until the job reports that it finished.
template <class R>
int poll_until_finished(BackgroundJob<R>& job) {
  for (int frame = 0; frame < 20000; ++frame) {
    if (job.poll()) return frame;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ADD_FAILURE() << "the job did not finish";
  return -1;
}

TEST(BackgroundJob, RunsOffTheCallingThreadAndHandsTheResultOverOnce) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> values(1000 + rng() % 1000);
  for (auto& v : values) v = rng() % 1000003;
  uint64_t want = 0;
  for (uint64_t v : values) want += v * v;

  BackgroundJob<uint64_t> job;
  EXPECT_EQ(job.state(), JobState::idle);
  EXPECT_FALSE(job.poll()) << "nothing to report before a start";
  Gate gate;
  std::thread::id worker;
  ASSERT_TRUE(job.start("sum of squares", [&](JobProgress& p) {
    worker = std::this_thread::get_id();
    gate.wait();
    uint64_t s = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      s += values[i] * values[i];
      p.set(i + 1, values.size());
    }
    return s;
  }));
  EXPECT_EQ(job.state(), JobState::running);
  EXPECT_TRUE(job.running());
  EXPECT_FALSE(job.poll()) << "still running: held at the gate";
  EXPECT_THROW(job.take_result(), std::logic_error);
  gate.release();
  poll_until_finished(job);
  EXPECT_EQ(job.state(), JobState::succeeded);
  EXPECT_FALSE(job.poll()) << "reported once";
  EXPECT_NE(worker, std::this_thread::get_id());
  EXPECT_EQ(job.take_result(), want);
  EXPECT_THROW(job.take_result(), std::logic_error) << "taken once";
  EXPECT_EQ(job.what(), "sum of squares");
}

TEST(BackgroundJob, ProgressIsSeenWhileTheWorkRuns) {
  BackgroundJob<int> job;
  Gate reached, go_on;
  ASSERT_TRUE(job.start("progress", [&](JobProgress& p) {
    p.set_phase("first half");
    p.set(3, 8);
    reached.release();
    go_on.wait();
    p.set_phase("second half");
    return 1;
  }));
  reached.wait();
  const JobProgress::Snapshot s = job.progress();
  EXPECT_EQ(s.phase, "first half");
  EXPECT_EQ(s.done, 3u);
  EXPECT_EQ(s.total, 8u);
  ASSERT_TRUE(s.fraction().has_value());
  EXPECT_DOUBLE_EQ(*s.fraction(), 3.0 / 8.0);
  const JobProgress::Snapshot unknown{"x", 0, 0}, over{"x", 9, 8};
  EXPECT_FALSE(unknown.fraction().has_value()) << "unknown total: indeterminate";
  EXPECT_DOUBLE_EQ(*over.fraction(), 1.0) << "clamped";
  go_on.release();
  poll_until_finished(job);
  EXPECT_EQ(job.state(), JobState::succeeded);
  EXPECT_EQ(job.progress().phase, "second half");
}

TEST(BackgroundJob, AnErrorBecomesTheFailedStateWithItsMessage) {
  BackgroundJob<int> job;
  ASSERT_TRUE(job.start("open x.trace.safetensors", [](JobProgress&) -> int {
    throw std::runtime_error("x.trace.safetensors: header length 9e18 exceeds the file");
  }));
  poll_until_finished(job);
  EXPECT_EQ(job.state(), JobState::failed);
  EXPECT_EQ(job.error(), "x.trace.safetensors: header length 9e18 exceeds the file");
  EXPECT_THROW(job.take_result(), std::logic_error);
}

TEST(BackgroundJob, CancelStopsWorkThatPollsForIt) {
  BackgroundJob<int> job;
  Gate started;
  ASSERT_TRUE(job.start("endless", [&](JobProgress& p) -> int {
    started.release();
    for (uint64_t i = 0;; ++i) {
      p.set(i, 0);
      p.throw_if_cancelled();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }));
  started.wait();
  EXPECT_FALSE(job.cancel_requested());
  job.cancel();
  EXPECT_TRUE(job.cancel_requested());
  poll_until_finished(job);
  EXPECT_EQ(job.state(), JobState::cancelled);
  EXPECT_TRUE(job.error().empty()) << "a cancel is not an error";
}

TEST(BackgroundJob, WorkThatFinishesDespiteACancelRequestIsStillCancelled) {
  // The request came in after the last check: the user asked for it to stop, so its result
  // must not replace what the viewer shows.
  BackgroundJob<int> job;
  Gate go_on;
  ASSERT_TRUE(job.start("late", [&](JobProgress&) {
    go_on.wait();
    return 7;
  }));
  job.cancel();
  go_on.release();
  poll_until_finished(job);
  EXPECT_EQ(job.state(), JobState::cancelled);
  EXPECT_THROW(job.take_result(), std::logic_error);
}

TEST(BackgroundJob, OneJobAtATimeThenAnotherAfterItFinished) {
  BackgroundJob<int> job;
  Gate go_on;
  ASSERT_TRUE(job.start("first", [&](JobProgress&) {
    go_on.wait();
    return 1;
  }));
  EXPECT_FALSE(job.start("second", [](JobProgress&) { return 2; })) << "refused while running";
  EXPECT_EQ(job.what(), "first");
  go_on.release();
  poll_until_finished(job);
  EXPECT_EQ(job.take_result(), 1);
  // A failed and a cancelled job leave the slot free as well.
  ASSERT_TRUE(job.start("fails", [](JobProgress&) -> int { throw std::runtime_error("no"); }));
  poll_until_finished(job);
  EXPECT_EQ(job.state(), JobState::failed);
  ASSERT_TRUE(job.start("third", [](JobProgress&) { return 3; }));
  poll_until_finished(job);
  EXPECT_EQ(job.state(), JobState::succeeded);
  EXPECT_TRUE(job.error().empty()) << "the previous job's error is gone";
  EXPECT_EQ(job.take_result(), 3);
}

TEST(BackgroundJob, DestroyingARunningJobCancelsAndWaitsForIt) {
  std::atomic<bool> finished{false};
  {
    BackgroundJob<int> job;
    ASSERT_TRUE(job.start("endless", [&](JobProgress& p) -> int {
      while (!p.cancel_requested()) std::this_thread::sleep_for(std::chrono::microseconds(200));
      finished = true;
      throw JobCancelled();
    }));
  }
  EXPECT_TRUE(finished.load()) << "joined, not detached";
}

TEST(BackgroundJob, StateNames) {
  EXPECT_EQ(to_string(JobState::idle), "idle");
  EXPECT_EQ(to_string(JobState::running), "running");
  EXPECT_EQ(to_string(JobState::succeeded), "succeeded");
  EXPECT_EQ(to_string(JobState::failed), "failed");
  EXPECT_EQ(to_string(JobState::cancelled), "cancelled");
}

}  // namespace
}  // namespace ts
