#include "app/model/viewer/loaded_run.h"

#include "app/model/analysis/analyze_run.h"
#include "app/model/capture/capture_metadata.h"
#include "app/model/trace_session.h"
#include "instrumentation/trace/display_text.h"

namespace ts {
namespace {

std::optional<Backend> backend_of(const RunView& run) {
  const auto it = run.metadata.find(std::string(trace_meta::backend));
  if (it == run.metadata.end()) return std::nullopt;
  return backend_from_name(it->second);
}

}  // namespace

std::string LoadedRun::display_name() const {
  if (path) return printable(path->filename().string());
  return run ? printable(run->label) + " (" + backend_text() + ")" : std::string("no run");
}

std::string LoadedRun::backend_text() const {
  return backend ? std::string(to_string(*backend)) : std::string("backend not recorded");
}

std::string LoadedRun::backend_and_seed_text() const {
  std::string s = backend_text();
  if (!run) return s;
  const auto seed = run->metadata.find(std::string(capture_meta::perturb_seed));
  if (seed != run->metadata.end()) s += ", perturb seed " + printable(seed->second);
  return s;
}

LoadedRun analyse_run(std::shared_ptr<const RunView> run, JobProgress& progress) {
  progress.throw_if_cancelled();
  // One pass: each tile's reference computed once for its naive baselines (the tolerance) and
  // its events. Computing the tolerance first, as a phase of its own, computed every tile twice
  // when they did not all fit the reference's cache (a third of the opening time of a large trace).
  progress.set_phase("analysing " + std::to_string(run->num_events()) + " events against the float64 reference");
  // The reference reads the run's float32 values in place (it holds the run; a decode trace's V
  // is half a GiB not copied).
  RunReferenceOptions options;
  options.inputs_owner = run;
  auto reference = std::make_shared<RunReference>(*run, options);
  auto report = std::make_shared<AnalysisReport>(analyze_run(*run, *reference));
  progress.throw_if_cancelled();
  LoadedRun out;
  out.backend = backend_of(*run);
  out.run = std::move(run);
  out.reference = std::move(reference);
  out.report = std::move(report);
  return out;
}

LoadedRun load_run_file(const std::filesystem::path& path, JobProgress& progress) {
  progress.set_phase("opening " + path.filename().string());
  auto run = std::make_shared<const RunView>(open_run(path));
  LoadedRun out = analyse_run(std::move(run), progress);
  out.path = path;
  return out;
}

LoadedRun capture_and_analyse(const CaptureSpec& spec, JobProgress& progress,
                              const std::optional<std::filesystem::path>& save_to) {
  progress.set_phase(std::string("capturing on the ") + std::string(to_string(spec.backend)) + " backend");
  auto result = std::make_shared<CaptureResult>(
      run_capture(spec, [&progress](uint64_t done, uint64_t total) { progress.set(done, total); },
                  progress.cancel_flag()));
  progress.throw_if_cancelled();
  if (save_to) {
    progress.set_phase("saving " + save_to->filename().string());
    save_trace(*result, *save_to);
  }
  // The view's spans point into result->events, which the CaptureResult keeps alive.
  auto view = std::shared_ptr<const RunView>(result, &result->view);
  LoadedRun out = analyse_run(std::move(view), progress);
  out.capture = std::move(result);
  out.spec = spec;
  out.backend = out.capture->outcome.backend;
  if (save_to) out.path = save_to;
  return out;
}

ABResult compare_with(const LoadedRun& a, LoadedRun b, JobProgress& progress) {
  progress.throw_if_cancelled();
  progress.set_phase("comparing " + a.display_name() + " with " + b.display_name());
  ABResult out;
  out.report = std::make_shared<ABReport>(compare_runs(*a.run, *b.run));
  out.b = std::move(b);
  return out;
}

}  // namespace ts
