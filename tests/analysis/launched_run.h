// Test helper: a RunView straight from a CPU launch with seeded random inputs (the view's spans
// point into the launch's captured events, which the view keeps alive).
#pragma once

#include <cstdint>
#include <optional>

#include "app/model/run_view.h"
#include "instrumentation/trace/trace_capture.h"
#include "kernels/attention_config.h"
#include "kernels/attention_inputs.h"
#include "kernels/random_inputs.h"

namespace ts::test {

struct LaunchSpec {
  AttentionConfig config;
  uint64_t seed = 1;
  InputPreset preset = InputPreset::none;
  int cpu_workers = 1;                   // 1: the deterministic schedule
  std::optional<uint64_t> perturb_seed;  // seeded thread order (races show)
  TraceFilter filter;
  int64_t capacity = int64_t{1} << 20;
};

RunView launch_run(const LaunchSpec& spec);

AttentionConfig make_config(KernelKind kernel, Fault fault, DType dtype, int64_t head_dim, int64_t seq_q,
                            int64_t seq_kv, bool causal, int64_t splits = 0, int64_t batch = 1, int64_t heads = 1);

}  // namespace ts::test
