// A run ready to be viewed: the RunView, the float64 reference the views compare it with (kept:
// compare_event re-uses its cached tiles), and its analysis; made on the viewer's worker thread
// (background_job.h) from a trace file or a capture, with progress and cancellation. No GL.
//
//   job.start("open " + name, [=](JobProgress& p) { return load_run_file(path, p); });
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/capture/run_capture.h"
#include "app/model/run_view.h"
#include "app/model/viewer/background_job.h"

namespace ts {

struct LoadedRun {
  std::shared_ptr<const RunView> run;
  std::shared_ptr<const RunReference> reference;
  std::shared_ptr<const AnalysisReport> report;
  std::optional<std::filesystem::path> path;      // the trace file it came from
  std::shared_ptr<const CaptureResult> capture;   // when launched here: what "save trace as" writes
  std::optional<CaptureSpec> spec;                // when launched here: what "re-run" repeats
  std::optional<Backend> backend;                 // where it ran; nullopt: the trace does not say

  bool valid() const { return run && reference && report; }
  // "cpu", "gpu", or "backend not recorded" (a user's trace need not say).
  std::string backend_text() const;
  // backend_text(), and the CPU's thread-order seed when the capture set one ("cpu, perturb seed
  // 7"): two race captures of the same config differ only there.
  std::string backend_and_seed_text() const;
  // The file name, or "capture (cpu)" for a run launched here and not saved; printable
  // (display_text.h): a file name may hold control characters.
  std::string display_name() const;
};

// The reference and the analysis of `run`, in one phase ("analysing N events against the
// float64 reference"); checks for cancellation before and after it.
LoadedRun analyse_run(std::shared_ptr<const RunView> run, JobProgress& progress);

// Opens, checks and analyses a trace file. Throws what open_run / analyze_run throw
// (FileReadError, TraceFormatError, AnalysisError), JobCancelled when cancelled.
LoadedRun load_run_file(const std::filesystem::path& path, JobProgress& progress);

// A capture the viewer is asked to run: what to capture, and where to save its trace (optional).
struct CaptureRequest {
  CaptureSpec spec;
  std::optional<std::filesystem::path> save_to;
};

// Runs a capture (progress in blocks), then analyses it; `save_to`, when given, is written
// with save_trace before the analysis. Throws what run_capture throws (ConfigError,
// CaptureError, InputError, LaunchError: no GPU, failed, cancelled), FileWriteError.
LoadedRun capture_and_analyse(const CaptureSpec& spec, JobProgress& progress,
                              const std::optional<std::filesystem::path>& save_to = std::nullopt);

// A second run compared with the first (A/B): B loaded and analysed, and compare_runs(A, B).
struct ABResult {
  LoadedRun b;
  std::shared_ptr<const ABReport> report;
};
ABResult compare_with(const LoadedRun& a, LoadedRun b, JobProgress& progress);

}  // namespace ts
