// Launching the attention kernels: what the CLI and the GUI call. One request (config,
// backend, trace request, CPU options) and the inputs in; the outputs, the Split-K partial
// buffers and the captured events out. Both backends run the same kernel source and go
// through the same plan (kernels/launch_plan.h): tiling, poisoned buffers, trace slot table.
//
//   ts::LaunchRequest req;
//   req.config = config;                       // splits 0 = the heuristic's choice
//   req.backend = ts::Backend::auto_;          // gpu when a device is present
//   req.trace.enabled = true;                  // with filters, capacity
//   ts::LaunchOutcome out = ts::launch_attention(req, ts::make_random_inputs(config, {.seed = 1}));
//
// Errors: ConfigError (invalid config), InputError (inputs that do not fit the config or hold
// NaN/Inf; names the tensor and the first bad index), LaunchError (no device, built without
// CUDA, kernel failure, cancelled — see LaunchError::reason()).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "instrumentation/trace/trace_capture.h"
#include "base/attention_config.h"
#include "base/attention_inputs.h"
#include "base/host_tensor.h"
#include "kernels/launch_error.h"
#include "kernels/tiling.h"

namespace ts {

struct LaunchRequest {
  AttentionConfig config;
  Backend backend = Backend::auto_;
  TraceRequest trace;
  std::optional<bool> tile_events;          // Split-K: trace every kv tile's state; nullopt: by size
  int cpu_workers = 0;                      // CPU: SIMT worker threads; 0 = all cores, 1 = deterministic
  std::optional<uint64_t> perturb_seed;     // CPU: resume threads in a seeded random order (races show)
  // Blocks done of all blocks of the run (every kernel of it); from a worker thread, throttled.
  std::function<void(uint64_t done, uint64_t total)> progress;
  const std::atomic<bool>* cancel = nullptr;  // CPU: checked between blocks; GPU: between kernels
};

struct LaunchOutcome {
  AttentionConfig config;  // as run: num_splits resolved (the heuristic's choice; 1 for fa1)
  Tiling tiling;
  Backend backend = Backend::cpu;  // the backend that ran (never auto_)
  std::string device;              // "CPU SIMT (2 workers)" or "NVIDIA H100 80GB HBM3 (sm_90)"
  HostTensor o;                    // [batch, heads, seq_q, head_dim], the config's dtype
  std::vector<float> lse;          // [batch, heads, seq_q]; -inf for a row that sees no key
  // Split-K only (empty for fa1): the partial pass's buffers as the reduce read them,
  // poisoned with NaN before the run (an unwritten entry stays NaN):
  //   partial_o [batch, heads, seq_q, num_splits, head_dim]  unnormalised O of each split
  //   partial_m [batch, heads, seq_q, num_splits]            max scaled score of each split
  //   partial_l [batch, heads, seq_q, num_splits]            sum exp(score - m) of each split
  std::vector<float> partial_o, partial_m, partial_l;
  CapturedEvents events;  // empty unless the request enabled tracing
  double elapsed_ms = 0.0;  // the kernels' time (GPU: CUDA events; CPU: wall clock)
};

LaunchOutcome launch_attention(const LaunchRequest& request, const AttentionInputs& inputs);

// Whether Backend::gpu can run here; when not, *reason (if given) says why, e.g.
// "no CUDA device: no CUDA-capable device is detected" or "built without CUDA".
bool gpu_available(std::string* reason = nullptr);

}  // namespace ts
