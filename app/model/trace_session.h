// Opening a trace file as a RunView: the trace layer reads and checks the file (every event
// against its stage table and attention description, the inputs and the output against the
// attention), and this adds what a run of our kernels carries besides (its config and tiling,
// checked against the attention) and the output's events (run_view.h: add_output_events), so
// that readers of a RunView (analysis, views) can index the inputs with any event's
// coordinates without further checks.
//
//   RunView run = open_run("run.trace.safetensors");
//   for (size_t i = 0; i < run.num_events(); ++i) { RunEvent e = run.event(i); ... }
//
// A trace captured with a filter holds only the traced heads' inputs (run.inputs.q_index(b, h)
// is -1 for the others). A trace that records its inputs as their generator's spec instead
// (app/model/generated_inputs.h) has them re-made here and checked against their hashes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>

#include "app/model/run_view.h"
#include "instrumentation/trace/trace_file.h"

namespace ts {

struct OpenRunOptions {
  // Re-make inputs recorded as a recipe (false: the view holds no inputs; `tilescope info`).
  bool remake_inputs = true;
  unsigned workers = 0;  // threads for re-making and hashing them; 0: every core
  // Work done of all (re-making's bytes generated, then hashed); from worker threads.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// Throws FileReadError (cannot open, or re-made inputs that would not fit in memory) or
// TraceFormatError naming the file and the problem (damaged file; a config or tiling that does
// not fit the attention; inputs whose recipe is damaged, unknown, or re-makes other inputs than
// the hashes say). The view's payload spans point into the trace's bytes, which payload_owner
// keeps alive. label = the file name.
RunView open_run(const std::filesystem::path& path, const OpenRunOptions& options = {});

// The same for a trace already opened (and checked by the trace layer).
RunView run_view_from_trace(std::shared_ptr<const TraceFile> trace, const OpenRunOptions& options = {});

// Whether the trace holds no inputs but their recipe (the view then has them re-made).
bool inputs_are_remade(const RunView& run);

}  // namespace ts
