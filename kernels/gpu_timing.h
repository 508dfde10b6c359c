// Timing the kernels on the GPU for benchmarks: the request's kernels run `warmup` + `runs`
// times on device buffers uploaded once (no host copies in the timed loop), timed with CUDA
// events, then once more for the outcome (outputs, partials, trace) that a benchmark checks
// against the reference. Only in builds with CUDA (TILESCOPE_HAVE_CUDA); errors as
// launch_attention's (ConfigError, InputError, LaunchError).
#pragma once

#include <vector>

#include "kernels/launcher.h"

namespace ts {

struct GpuTiming {
  double ms_per_run = 0.0;        // the median of round_ms
  std::vector<double> round_ms;   // each round's mean over its `runs` runs (every kernel of a run)
  int runs = 0;
  LaunchOutcome outcome;
};

GpuTiming time_on_gpu(const LaunchRequest& request, const AttentionInputs& inputs, int warmup,
                      int runs);

// Several requests on the same inputs (a kernel's builds, say) timed in turn, so that each is
// measured before and after every other while the GPU's clocks and temperature move: `warmup`
// runs of each, then `rounds` rounds, each timing `runs` runs of every request in order. Every
// request's buffers are on the device at once.
std::vector<GpuTiming> time_in_turn_on_gpu(const std::vector<LaunchRequest>& requests,
                                           const AttentionInputs& inputs, int warmup, int runs, int rounds);

}  // namespace ts
