// Test helper: a RunView of a CPU capture with seeded random inputs, through the capture
// pipeline the CLI and the GUI use (app/model/capture/run_capture.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "app/model/run_view.h"
#include "instrumentation/trace/trace_capture.h"
#include "base/attention_config.h"
#include "base/random_inputs.h"

namespace ts::test {

struct LaunchSpec {
  AttentionConfig config;
  uint64_t seed = 1;
  InputPreset preset = InputPreset::none;
  double scale = 1.0;                    // the random inputs' scale (RandomInputSpec::scale)
  int cpu_workers = 1;                   // 1: the deterministic schedule
  std::optional<uint64_t> perturb_seed;  // seeded thread order (races show)
  TraceFilter filter;
  int64_t capacity = int64_t{1} << 20;
  std::optional<bool> tile_events;       // Split-K per-kv-tile events; nullopt: by size
};

// The index of a stage of the run's table, by name; fails the test when absent.
int32_t stage_of(const RunView& run, std::string_view name);

RunView launch_run(const LaunchSpec& spec);

// The same run with everything that names our kernel removed (its config and tiling, the
// metadata): what a user's own kernel looks like to the analysis.
RunView blind(RunView run);

AttentionConfig make_config(KernelKind kernel, Fault fault, DType dtype, int64_t head_dim, int64_t seq_q,
                            int64_t seq_kv, bool causal, int64_t splits = 0, int64_t batch = 1, int64_t heads = 1);

}  // namespace ts::test
