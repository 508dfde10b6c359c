// The viewer's controller: what the window asks for (open a trace, compare with one, launch a
// capture, re-run on the other backend, swap A and B, save the trace, export files) run as jobs
// on a worker thread (background_job.h), and what each produced applied to the session between
// frames, on the UI thread. The window draws and forwards intents; this runs without a display.
//
//   ViewerController c(recent);
//   c.open(path, OpenTarget::a);            // an intent: never blocks, never throws
//   ...each frame:
//   ControllerUpdate u = c.poll();          // applies what finished; u says what changed
//   for (auto& p : u.problems) errors.report(p.where, p.error);
//   draw(c.session(), c.progress());
//
// One job runs at a time. A request made while one runs waits in a queue of one slot per kind
// (JobKind): a newer request of a kind replaces the one of that kind still waiting, so only the
// latest choice runs (as a replay manager coalesces the requests a UI fires faster than they
// finish). A new request for run A also cancels a running one for run A: its result would be
// replaced at once. What a waiting request works on (run A, run B) is read when it starts.
//
// Jobs may publish partial results (JobOutbox): a run is shown as soon as its verdict and
// overview are known, and its details follow (loaded_run.h: analyse_run_streamed).
#pragma once

#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/model/viewer/background_job.h"
#include "app/model/viewer/loaded_run.h"
#include "app/model/viewer/recent_files.h"
#include "app/model/viewer/viewer_session.h"

namespace ts {

// The kinds of request; a newer one of a kind replaces a waiting one of the same kind.
enum class JobKind { run_a, run_b, save, export_files };

enum class OpenTarget { a, b };  // open as the run (A) or to compare with it (B)

// Whether a CUDA device can run captures (kernels/launcher.h: gpu_available), and why not.
struct GpuState {
  bool available = false;
  std::string why_not;
};

class ViewerController;
using ControllerApply = std::function<void(ViewerController&)>;

// What a running job hands to the UI thread before it ends: steps applied by the next poll(),
// in the order published. Thread-safe.
class JobOutbox {
 public:
  void publish(ControllerApply apply);
  std::vector<ControllerApply> take();

 private:
  std::mutex mutex_;
  std::vector<ControllerApply> steps_;
};

// What poll() found, for the window: errors to show, tabs to switch, the startup's outcome.
struct ControllerUpdate {
  struct Problem {
    std::string where;
    std::exception_ptr error;
  };
  std::vector<Problem> problems;  // failed jobs, failed apply steps, refused requests
  bool run_shown = false;         // run A was replaced (a run opened, launched or compared as a pair)
  bool shown_at_startup = false;  // ... by the request made at start
  bool b_shown = false;           // run B was set by a comparison the user asked for
  // The request made at start (a trace, a pair, the demo) has ended: how (succeeded, failed,
  // cancelled), what it threw, and whether --select named an event the run does not have.
  struct Startup {
    JobState state = JobState::succeeded;
    std::exception_ptr error;
    bool bad_select = false;
  };
  std::optional<Startup> startup;
};

// What the viewer is asked to show at start (the command line).
struct StartupRequest {
  std::optional<std::filesystem::path> run, against;
  bool demo = false;
  std::optional<SelectRequest> select;
};

class ViewerController {
 public:
  explicit ViewerController(RecentFiles& recent) : recent_(recent) {}
  ~ViewerController();
  ViewerController(const ViewerController&) = delete;
  ViewerController& operator=(const ViewerController&) = delete;

  // --- intents (the UI thread; none blocks, none throws: a refused one is a problem in the
  // next poll()) ---
  void start(const StartupRequest& request);
  // A trace as run A, or as B compared with A (as A when no run is open).
  void open(const std::filesystem::path& path, OpenTarget target);
  void open_pair(const std::filesystem::path& a, const std::filesystem::path& b);
  // A capture as run A, or as B compared with A (as A when no run is open). A path to save to
  // is checked now, before anything runs.
  void launch(const CaptureRequest& request, bool as_b);
  // The built-in demo: the launch form's default on the CPU backend, as run A.
  void launch_demo();
  // Run A's capture again on the other backend, compared with A as B. Runs of our kernels only.
  bool can_rerun() const;
  void rerun_on_other_backend();
  void swap_ab();
  void save_trace_as(const std::filesystem::path& path);
  // Files the window prepared (heatmaps are drawn by the GUI): `write` runs on the worker
  // thread and returns how many files it wrote into `folder`.
  void export_files(const std::filesystem::path& folder, std::function<size_t(JobProgress&)> write);
  // Cancels the running job and forgets the waiting ones.
  void cancel();

  // --- each frame ---
  ControllerUpdate poll();

  ViewerSession& session() { return session_; }
  const ViewerSession& session() const { return session_; }
  bool busy() const { return job_.running() || !waiting_.empty(); }
  const std::string& job_what() const { return job_.what(); }
  JobProgress::Snapshot progress() const { return job_.progress(); }
  bool cancel_requested() const { return job_.cancel_requested(); }
  // The requests waiting behind the running job, oldest first (their names).
  std::vector<std::string> waiting() const;
  // The last job's outcome, or what it reported ("exported 12 files to ...").
  const std::string& status() const { return status_; }
  // Whether a GPU can run captures: asked once, on a thread of its own (a CUDA runtime can take
  // seconds to answer); nullopt until it has.
  const std::optional<GpuState>& gpu_state();

 private:
  using Work = std::function<ControllerApply(JobProgress&, JobOutbox&)>;
  // Made when the request starts (reads the session then); an empty Work: nothing left to do.
  using MakeWork = std::function<Work(ViewerController&)>;
  struct Request {
    JobKind kind;
    std::string what;
    MakeWork make;
  };

  void request(JobKind kind, std::string what, MakeWork make);
  void start_next();
  void apply(const std::string& what, const ControllerApply& step);
  void problem(std::string where, std::exception_ptr error);
  // Shows a new run A (applies a --select waiting for it). Returns whether a --select chose the
  // event shown.
  bool show_run(LoadedRun run);
  // Shows run B; `to_difference`: selects the first event where A and B differ (a B just
  // compared, where no --select chose the event; not a swap, which keeps the selection).
  void set_b(ABResult ab, bool asked, bool to_difference);
  void remember(const std::filesystem::path& path);
  Work launch_work(const CaptureRequest& request, bool as_b);

  RecentFiles& recent_;
  ViewerSession session_;
  BackgroundJob<ControllerApply> job_;
  std::optional<JobKind> running_kind_;
  std::shared_ptr<JobOutbox> outbox_;
  std::deque<Request> waiting_;
  std::string status_;
  ControllerUpdate update_;  // what the intents and steps collect until poll() hands it over

  bool startup_running_ = false;  // the running job is the one asked for at start
  std::optional<SelectRequest> pending_select_;
  bool bad_select_ = false;

  BackgroundJob<GpuState> gpu_job_;
  std::optional<GpuState> gpu_;
};

}  // namespace ts
