// A capture: generate or load the inputs, launch the kernels with tracing, and hold the
// result both as the launcher's outcome and as a RunView (what analysis and views read), with
// the metadata its trace file will carry. save_trace writes it as a self-contained trace:
// events, the traced heads' inputs, the output and its LSE, and the metadata.
//
//   CaptureSpec spec;  spec.config = config;  spec.backend = Backend::cpu;
//   CaptureResult r = run_capture(spec, [](uint64_t done, uint64_t total) { ... }, &cancel);
//   save_trace(r, "run.trace.safetensors");
//   analyse(r.view);   // the same run as open_run("run.trace.safetensors") gives
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "app/model/capture/capture_spec.h"
#include "app/model/run_view.h"
#include "kernels/launcher.h"

namespace ts {

struct CaptureResult {
  LaunchOutcome outcome;  // as the launcher returned it, except `events` (moved into `events`)
  std::shared_ptr<const CapturedEvents> events;  // what view's payload spans point into
  RunView view;  // label "capture"; metadata: the keys save_trace writes (no writer keys)
};

// Work done of all the work of the current phase (CapturePhase); called from worker threads,
// throttled by the caller. Each phase starts again from 0.
using CaptureProgress = std::function<void(uint64_t done, uint64_t total)>;

// What a capture is doing: the work its progress counts, in order.
enum class CapturePhase {
  inputs,   // generating the random inputs (values) or reading the input files (once, at the end)
  kernels,  // running the kernels (blocks)
  hashing,  // hashing the random inputs the trace records as their spec (bytes)
  writing,  // writing the trace (bytes; save_trace)
};
const char* to_string(CapturePhase phase);      // "generating inputs", "running kernels", ...
const char* progress_unit(CapturePhase phase);  // "values", "blocks", "bytes"
// Called on the calling thread as each phase starts.
using CapturePhaseChange = std::function<void(CapturePhase phase)>;

// Checks the request (check_capture: config, inputs, trace filter within the config's sizes,
// stages the kernel has, capacity, CPU-only options), loads the inputs and launches. `cancel` is polled between blocks
// (CPU) or kernels (GPU). Throws ConfigError, CaptureError, InputError or FileError for bad
// requests and inputs, LaunchError for a run that cannot start or finish (reason() says which:
// no device, not built with CUDA, failed, cancelled, too large).
CaptureResult run_capture(const CaptureSpec& spec, const CaptureProgress& progress = {},
                          const std::atomic<bool>* cancel = nullptr, const CapturePhaseChange& phase = {});

// Writes the capture's trace atomically (temporary file, then rename): its events, output and
// metadata, and the traced heads' inputs unless the capture records them as their recipe
// (CaptureSpec::store_inputs). Throws FileWriteError naming the path (also when it is one of
// the capture's input files, or not a regular file: write_target.h); nothing is left behind
// then. `progress`: bytes written of all.
void save_trace(const CaptureResult& result, const std::filesystem::path& path,
                const CaptureProgress& progress = {});

// Whether the capture's trace stores its inputs (false: their recipe, or only input files' hashes).
bool stores_inputs(const CaptureResult& result);

// The checks save_trace makes of its path, before a run: so that a bad -o is reported at once,
// not after the work (check_output_file, not one of the spec's input files, and nothing but a
// trace to replace: check_replaces_only_a_trace).
void check_capture_output(const CaptureSpec& spec, const std::filesystem::path& path);

// A RunView of a launch, without a file: config, tiling and output from `outcome` (its own
// `events` member is not read), the events from `events` (shared: the view's spans point into
// it), the traced pairs' inputs and the metadata as given.
RunView run_view_from_capture(std::shared_ptr<const CapturedEvents> events,
                              const LaunchOutcome& outcome, HeadInputs inputs,
                              std::map<std::string, std::string> metadata,
                              std::string label = "capture");

}  // namespace ts
