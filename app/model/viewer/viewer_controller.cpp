#include "app/model/viewer/viewer_controller.h"

#include <algorithm>
#include <stdexcept>

#include "app/model/viewer/launch_form.h"
#include "instrumentation/trace/atomic_file.h"
#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/trace_file.h"
#include "kernels/launcher.h"

namespace ts {
namespace {

// A trace opened from a file, saved under another name: its bytes, written atomically (read
// with the checks of every reader: a regular file, unchanged while it is copied).
void copy_file_atomically(const std::filesystem::path& from, const std::filesystem::path& to) {
  check_replaces_only_a_trace(to);  // what it copies is a trace
  const InputFile in(from);
  AtomicFileWriter out(to);
  std::vector<std::byte> buffer(static_cast<size_t>(std::min<uint64_t>(in.size(), uint64_t{1} << 20)));
  for (uint64_t done = 0; done < in.size();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), in.size() - done));
    in.read_at(done, buffer.data(), n);
    out.write(buffer.data(), n);
    done += n;
  }
  in.check_unchanged();
  out.commit([&] { check_replaces_only_a_trace(to); });
}

bool same_run(const ViewerSession& session, const LoadedRun& a) {
  return session.has_run() && session.run().run == a.run;
}

}  // namespace

void JobOutbox::publish(ControllerApply apply) {
  const std::lock_guard<std::mutex> lock(mutex_);
  steps_.push_back(std::move(apply));
}

std::vector<ControllerApply> JobOutbox::take() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(steps_, {});
}

ViewerController::~ViewerController() {
  job_.stop();
  gpu_job_.stop();
}

// --- intents ------------------------------------------------------------------------------------

void ViewerController::start(const StartupRequest& r) {
  pending_select_ = r.select;
  if (r.run && r.against) open_pair(*r.run, *r.against);
  else if (r.run) open(*r.run, OpenTarget::a);
  else if (r.demo) launch_demo();
  startup_running_ = job_.running();
  if (!startup_running_) pending_select_.reset();
}

void ViewerController::open(const std::filesystem::path& path, OpenTarget target) {
  if (target == OpenTarget::b) {
    request(JobKind::run_b, "compare with " + path.filename().string(), [path](ViewerController& c) -> Work {
      if (!c.session_.has_run()) {  // nothing to compare with: open it as the run
        c.open(path, OpenTarget::a);
        return {};
      }
      return [a = c.session_.run(), path](JobProgress& p, JobOutbox&) -> ControllerApply {
        LoadedRun b = load_run_file(path, p);
        auto ab = std::make_shared<ABResult>(compare_with(a, std::move(b), p));
        return [ab, a, path](ViewerController& c) {
          if (!same_run(c.session_, a)) return;  // A changed meanwhile
          c.set_b(std::move(*ab), true, true);
          c.remember(path);
        };
      };
    });
    return;
  }
  request(JobKind::run_a, "open " + path.filename().string(), [path](ViewerController&) -> Work {
    return [path](JobProgress& p, JobOutbox&) -> ControllerApply {
      auto run = std::make_shared<LoadedRun>(load_run_file(path, p));
      return [run, path](ViewerController& c) {
        c.show_run(std::move(*run));
        c.remember(path);
      };
    };
  });
}

void ViewerController::open_pair(const std::filesystem::path& a_path, const std::filesystem::path& b_path) {
  request(JobKind::run_a, "open " + a_path.filename().string() + " and " + b_path.filename().string(),
          [a_path, b_path](ViewerController&) -> Work {
            return [a_path, b_path](JobProgress& p, JobOutbox&) -> ControllerApply {
              auto a = std::make_shared<LoadedRun>(load_run_file(a_path, p));
              LoadedRun b = load_run_file(b_path, p);
              auto ab = std::make_shared<ABResult>(compare_with(*a, std::move(b), p));
              return [a, ab, a_path, b_path](ViewerController& c) {
                const bool chosen = c.show_run(std::move(*a));
                c.set_b(std::move(*ab), false, !chosen);
                c.remember(a_path);
                c.remember(b_path);
              };
            };
          });
}

ViewerController::Work ViewerController::launch_work(const CaptureRequest& request, bool as_b) {
  std::optional<LoadedRun> a;
  if (as_b && session_.has_run()) a = session_.run();
  return [request, a](JobProgress& p, JobOutbox&) -> ControllerApply {
    auto run = std::make_shared<LoadedRun>(capture_and_analyse(request.spec, p, request.save_to));
    if (a) {
      auto ab = std::make_shared<ABResult>(compare_with(*a, std::move(*run), p));
      return [ab, a, save = request.save_to](ViewerController& c) {
        if (!same_run(c.session_, *a)) return;
        c.set_b(std::move(*ab), true, true);
        if (save) c.remember(*save);
      };
    }
    return [run, save = request.save_to](ViewerController& c) {
      c.show_run(std::move(*run));
      if (save) c.remember(*save);
    };
  };
}

void ViewerController::launch(const CaptureRequest& r, bool as_b) {
  const std::string what = std::string(as_b ? "re-run on " : "capture on ") + std::string(to_string(r.spec.backend)) +
                           " (" + std::string(to_string(r.spec.config.kernel)) + ", " +
                           std::string(to_string(r.spec.config.fault)) + ")";
  // A path to save to is checked before the run (write_target.h: not a device, not an input).
  if (r.save_to) {
    try {
      check_capture_output(r.spec, *r.save_to);
    } catch (...) {
      problem(what, std::current_exception());
      return;
    }
  }
  request(as_b ? JobKind::run_b : JobKind::run_a, what,
          [r, as_b](ViewerController& c) -> Work { return c.launch_work(r, as_b); });
}

void ViewerController::launch_demo() {
  LaunchForm demo = default_launch_form();
  demo.backend = Backend::cpu;
  try {
    launch({to_capture_spec(demo), std::nullopt}, false);
  } catch (...) {
    problem("capture the built-in demo", std::current_exception());
  }
}

bool ViewerController::can_rerun() const {
  return session_.has_run() && (session_.run().spec || session_.view().config);
}

void ViewerController::rerun_on_other_backend() {
  if (!can_rerun()) return;
  try {
    const LoadedRun& run = session_.run();
    CaptureSpec spec = run.spec ? *run.spec : to_capture_spec(form_from_run(*run.run));
    // A run of our kernels says where it ran; one that does not is taken as the CPU's.
    spec = on_other_backend(spec, run.backend.value_or(Backend::cpu));
    launch({spec, std::nullopt}, true);
  } catch (...) {
    problem("re-run on the other backend", std::current_exception());
  }
}

void ViewerController::swap_ab() {
  request(JobKind::run_a, "swap A and B", [](ViewerController& c) -> Work {
    if (!c.session_.has_b()) return {};
    return [a = c.session_.run(), b = c.session_.b()](JobProgress& p, JobOutbox&) -> ControllerApply {
      auto ab = std::make_shared<ABResult>(compare_with(b, a, p));
      return [ab, a, b](ViewerController& c) {
        if (!same_run(c.session_, a)) return;
        const std::optional<size_t> keep = c.session_.selected();
        c.session_.open(b);
        if (keep && *keep < b.run->num_events()) c.session_.stepper().select(*keep);
        c.set_b(std::move(*ab), false, false);
      };
    };
  });
}

void ViewerController::save_trace_as(const std::filesystem::path& path) {
  request(JobKind::save, "save trace as " + path.filename().string(), [path](ViewerController& c) -> Work {
    if (!c.session_.has_run()) return {};
    return [run = c.session_.run(), path](JobProgress& p, JobOutbox&) -> ControllerApply {
      p.set_phase("writing " + path.filename().string());
      if (run.capture) save_trace(*run.capture, path);
      else if (run.path) copy_file_atomically(*run.path, path);
      else throw std::runtime_error("this run has no trace to save");
      return [path](ViewerController& c) {
        c.remember(path);
        c.status_ = "saved " + path.string();
      };
    };
  });
}

void ViewerController::export_files(const std::filesystem::path& folder, std::function<size_t(JobProgress&)> write) {
  request(JobKind::export_files, "export to " + folder.string(), [folder, write](ViewerController&) -> Work {
    return [folder, write](JobProgress& p, JobOutbox&) -> ControllerApply {
      const size_t count = write(p);
      return [count, folder](ViewerController& c) {
        c.status_ = "exported " + std::to_string(count) + " files to " + folder.string();
      };
    };
  });
}

void ViewerController::cancel() {
  waiting_.clear();
  job_.cancel();
}

std::vector<std::string> ViewerController::waiting() const {
  std::vector<std::string> out;
  for (const Request& r : waiting_) out.push_back(r.what);
  return out;
}

const std::optional<GpuState>& ViewerController::gpu_state() {
  if (!gpu_ && gpu_job_.state() == JobState::idle)
    gpu_job_.start("check for a GPU", [](JobProgress&) {
      GpuState s;
      s.available = gpu_available(&s.why_not);
      return s;
    });
  if (gpu_job_.poll()) {
    if (gpu_job_.state() == JobState::succeeded) gpu_ = gpu_job_.take_result();
    else gpu_ = GpuState{false, "the check failed: " + gpu_job_.error()};
  }
  return gpu_;
}

// --- jobs ---------------------------------------------------------------------------------------

void ViewerController::request(JobKind kind, std::string what, MakeWork make) {
  // The latest request of a kind wins: a waiting one of the kind is dropped, and a running one
  // for run A is cancelled (what it would show is replaced at once).
  std::erase_if(waiting_, [kind](const Request& r) { return r.kind == kind; });
  if (job_.running() && running_kind_ == kind && kind == JobKind::run_a) job_.cancel();
  waiting_.push_back({kind, std::move(what), std::move(make)});
  if (!job_.running()) start_next();
}

void ViewerController::start_next() {
  while (!job_.running() && !waiting_.empty()) {
    Request r = std::move(waiting_.front());
    waiting_.pop_front();
    Work work;
    try {
      work = r.make(*this);
    } catch (...) {
      problem(r.what, std::current_exception());
      continue;
    }
    if (!work) continue;  // nothing left to do (or it queued another request)
    outbox_ = std::make_shared<JobOutbox>();
    job_.start(r.what, [work = std::move(work), outbox = outbox_](JobProgress& p) { return work(p, *outbox); });
    running_kind_ = r.kind;
    status_ = r.what + "...";
  }
}

void ViewerController::apply(const std::string& what, const ControllerApply& step) {
  try {
    step(*this);
  } catch (...) {
    problem(what, std::current_exception());
  }
}

void ViewerController::problem(std::string where, std::exception_ptr error) {
  update_.problems.push_back({std::move(where), std::move(error)});
}

ControllerUpdate ViewerController::poll() {
  if (outbox_)
    for (const ControllerApply& step : outbox_->take()) apply(job_.what(), step);
  if (job_.poll()) {
    const std::string what = job_.what();
    const JobState state = job_.state();
    if (outbox_)  // what it published just before it ended
      for (const ControllerApply& step : outbox_->take()) apply(what, step);
    outbox_.reset();
    running_kind_.reset();
    if (state == JobState::succeeded) {
      status_ = what + ": done";
      apply(what, job_.take_result());
    } else if (state == JobState::failed) {
      status_ = what + ": failed";
      problem(what, job_.exception());
    } else if (state == JobState::cancelled) {
      status_ = what + ": cancelled";
    }
    if (startup_running_) {
      startup_running_ = false;
      pending_select_.reset();  // a --select that found no run has nothing to apply to
      update_.startup = ControllerUpdate::Startup{state, job_.exception(), bad_select_};
    }
    start_next();
  }
  return std::exchange(update_, {});
}

// --- apply steps (the UI thread) ----------------------------------------------------------------

bool ViewerController::show_run(LoadedRun run) {
  session_.open(std::move(run));
  update_.run_shown = true;
  update_.shown_at_startup = startup_running_;
  if (!pending_select_) return false;
  const SelectRequest r = *pending_select_;
  pending_select_.reset();
  try {
    if (session_.apply(r)) return true;
    if (r.first_divergence) status_ = "the run has no divergence: showing its first event";
  } catch (...) {
    problem("--select", std::current_exception());
    // An event past the run's end is a bad argument, as in the CLI: a headless run exits 2.
    bad_select_ = true;
  }
  return false;
}

void ViewerController::set_b(ABResult ab, bool asked, bool to_difference) {
  session_.set_b(std::move(ab));
  // Where A - B is not zero: A's own first divergence says nothing of B (A may be the clean one).
  if (to_difference) session_.to_first_ab_difference();
  update_.b_shown |= asked;
}

void ViewerController::remember(const std::filesystem::path& path) {
  try {
    recent_.add(path);
  } catch (...) {
    problem("recent files", std::current_exception());
  }
}

}  // namespace ts
