// What a capture asks for: the kernel and its config, the backend, what to trace, where the
// inputs come from (seeded random values or Q/K/V files), and the CPU runtime's options.
// Filled by the CLI (`tilescope capture`) and the GUI's launch panel; run by run_capture.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <variant>
#include <vector>

#include "instrumentation/trace/trace_capture.h"
#include "base/attention_config.h"
#include "base/random_inputs.h"

namespace ts {

// Q, K, V read from files: three files in q, k, v order (each a .npy or a .safetensors holding
// one tensor), or one .safetensors holding tensors named q, k and v: q [batch, heads, seq_q,
// head_dim], k and v [batch, heads_kv, seq_kv, head_dim] (config.kv_heads()), in the config's
// dtype, with finite values.
struct InputFiles {
  std::vector<std::filesystem::path> paths;
};

using InputSource = std::variant<RandomInputSpec, InputFiles>;

struct CaptureSpec {
  AttentionConfig config;
  Backend backend = Backend::auto_;
  // Filters and capacity; tracing on by default (disabled: inputs and output only).
  TraceRequest trace = [] {
    TraceRequest t;
    t.enabled = true;
    return t;
  }();
  InputSource inputs = RandomInputSpec{};
  // Whether the trace stores the traced heads' Q, K, V. nullopt: for inputs from files yes; for
  // random inputs no, it stores their generator's spec and hashes (re-made when the trace is
  // opened: app/model/generated_inputs.h). false with input files: the trace names the files
  // and their hashes only, and cannot be analysed on its own.
  std::optional<bool> store_inputs;
  std::optional<bool> tile_events;      // Split-K: every kv tile's state; nullopt: by what the filters keep (tile_events_by_default)
  int cpu_workers = 0;                  // CPU: SIMT worker threads; 0 = all cores
  std::optional<uint64_t> perturb_seed; // CPU: seeded thread order between barriers
};

}  // namespace ts
