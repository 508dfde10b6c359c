// Work the viewer does off the UI thread (opening and analysing a trace, a capture, an A/B
// comparison, an export): one BackgroundJob runs one function on its own thread; the UI polls
// it once a frame, draws its progress, may cancel it, and takes the result or the error when
// it has finished. The UI never blocks on it and never calls the backend itself.
//
//   BackgroundJob<LoadedRun> job;
//   job.start("open run.trace.safetensors", [path](JobProgress& p) { return load_run_file(path, p); });
//   ...each frame:
//   if (job.poll()) {                       // true once, when it has just finished
//     if (job.state() == JobState::succeeded) use(job.take_result());
//     else if (job.state() == JobState::failed) errors.report(job.what(), job.error());
//   }
//   draw(job.progress());  if (cancel_clicked) job.cancel();
//
// States: idle -> running -> succeeded | failed | cancelled (-> running again on start()).
// A job whose work throws after cancel() was requested ends `cancelled`, not `failed`: the
// work may stop by throwing anything (JobCancelled, the launcher's "cancelled" error). No GL.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace ts {

enum class JobState { idle, running, succeeded, failed, cancelled };
std::string_view to_string(JobState state);

// Thrown by work that noticed a cancel request (JobProgress::throw_if_cancelled).
class JobCancelled : public std::runtime_error {
 public:
  JobCancelled() : std::runtime_error("cancelled") {}
};

// What the work and the UI share while it runs: the phase, how far it is, the cancel request.
// Thread-safe.
class JobProgress {
 public:
  struct Snapshot {
    std::string phase;       // "computing the reference", "capturing"
    uint64_t done = 0, total = 0;
    // done / total in [0, 1], or nothing while the amount of work is unknown (indeterminate).
    std::optional<double> fraction() const {
      if (total == 0) return std::nullopt;
      return static_cast<double>(std::min(done, total)) / static_cast<double>(total);
    }
  };

  void set_phase(std::string phase);  // also resets done / total
  void set(uint64_t done, uint64_t total);
  Snapshot snapshot() const;

  void request_cancel() { cancel_.store(true); }
  bool cancel_requested() const { return cancel_.load(); }
  const std::atomic<bool>* cancel_flag() const { return &cancel_; }
  void throw_if_cancelled() const {
    if (cancel_requested()) throw JobCancelled();
  }

 private:
  mutable std::mutex mutex_;
  std::string phase_;
  uint64_t done_ = 0, total_ = 0;
  std::atomic<bool> cancel_{false};
};

template <class Result>
class BackgroundJob {
 public:
  using Work = std::function<Result(JobProgress&)>;

  BackgroundJob() = default;
  ~BackgroundJob() { stop(); }
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;

  // Starts `work` on a new thread. Returns false (and starts nothing) while a job is running:
  // one at a time. `what` names the job in progress lines and error messages.
  bool start(std::string what, Work work) {
    if (state_ == JobState::running) return false;
    join();
    what_ = std::move(what);
    error_.clear();
    exception_ = nullptr;
    result_.reset();
    progress_ = std::make_unique<JobProgress>();
    finished_.store(false);
    state_ = JobState::running;
    thread_ = std::thread([this, work = std::move(work), progress = progress_.get()] {
      std::optional<Result> result;
      std::string error;
      std::exception_ptr exception;
      bool ok = false;
      try {
        result.emplace(work(*progress));
        ok = true;
      } catch (const std::exception& e) {
        error = e.what();
        exception = std::current_exception();
      } catch (...) {
        error = "unknown error";
        exception = std::current_exception();
      }
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        outcome_ok_ = ok;
        pending_result_ = std::move(result);
        pending_error_ = std::move(error);
        pending_exception_ = std::move(exception);
      }
      finished_.store(true);
    });
    return true;
  }

  // Asks the work to stop (it polls JobProgress); the state becomes `cancelled` when it has.
  void cancel() {
    if (state_ == JobState::running && progress_) progress_->request_cancel();
  }
  bool cancel_requested() const { return progress_ && progress_->cancel_requested(); }

  // Called by the UI once a frame. Returns true exactly once per job: on the call that finds
  // it finished (state() is then succeeded, failed or cancelled).
  bool poll() {
    if (state_ != JobState::running || !finished_.load()) return false;
    join();
    const std::lock_guard<std::mutex> lock(mutex_);
    const bool cancelled = progress_->cancel_requested();
    if (outcome_ok_ && !cancelled) {
      state_ = JobState::succeeded;
      result_ = std::move(pending_result_);
    } else if (cancelled) {
      state_ = JobState::cancelled;  // whatever it returned or threw, the user asked it to stop
    } else {
      state_ = JobState::failed;
      error_ = std::move(pending_error_);
      exception_ = std::move(pending_exception_);
    }
    pending_result_.reset();
    return true;
  }

  JobState state() const { return state_; }
  bool running() const { return state_ == JobState::running; }
  const std::string& what() const { return what_; }
  const std::string& error() const { return error_; }  // after `failed`
  const std::exception_ptr& exception() const { return exception_; }  // after `failed`: what was thrown
  JobProgress::Snapshot progress() const { return progress_ ? progress_->snapshot() : JobProgress::Snapshot{}; }

  // The result after `succeeded` (once; moves it out). Throws std::logic_error otherwise.
  Result take_result() {
    if (!result_) throw std::logic_error("BackgroundJob '" + what_ + "' has no result to take");
    Result r = std::move(*result_);
    result_.reset();
    return r;
  }

  // Waits for the thread to end, and forgets the job's state (for the destructor and tests).
  void stop() {
    cancel();
    join();
    if (state_ == JobState::running) poll();
  }

 private:
  void join() {
    if (thread_.joinable()) thread_.join();
  }

  std::string what_;
  JobState state_ = JobState::idle;
  std::unique_ptr<JobProgress> progress_;
  std::thread thread_;
  std::atomic<bool> finished_{false};
  std::mutex mutex_;
  bool outcome_ok_ = false;
  std::optional<Result> pending_result_;
  std::string pending_error_;
  std::exception_ptr pending_exception_;
  std::optional<Result> result_;
  std::string error_;
  std::exception_ptr exception_;
};

}  // namespace ts
