// Opening a trace file as a RunView: the file is read and checked by the trace layer, then
// the run's description is read from its metadata (config and tiling JSON, which must agree
// with each other and with the file's tile sizes) and every event, the traced pairs' inputs
// and the output are checked against it, so that readers of a RunView (analysis, views) can
// index the inputs and the tiling with any event's coordinates without further checks.
//
//   RunView run = open_run("run.trace.safetensors");
//   for (size_t i = 0; i < run.num_events(); ++i) { RunEvent e = run.event(i); ... }
//
// A trace captured with a filter holds only the traced pairs' inputs (run.pair_index(b, h) is
// -1 for the others).
#pragma once

#include <filesystem>
#include <memory>

#include "app/model/run_view.h"
#include "instrumentation/trace/trace_file.h"

namespace ts {

// Throws FileReadError (cannot open) or TraceFormatError naming the file and the problem
// (damaged file; metadata config or tiling missing or invalid; events, inputs or output that
// do not fit the config). The view's payload spans point into the file's bytes in memory, which
// payload_owner keeps alive. label = the file name.
RunView open_run(const std::filesystem::path& path);

// The same for a trace already opened (and checked by the trace layer).
RunView run_view_from_trace(std::shared_ptr<const TraceFile> trace);

}  // namespace ts
