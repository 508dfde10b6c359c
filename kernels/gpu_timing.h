// Timing the kernels on the GPU for benchmarks: the request's kernels run `warmup` + `runs`
// times on device buffers uploaded once (no host copies in the timed loop), timed with CUDA
// events, then once more for the outcome (outputs, partials, trace) that a benchmark checks
// against the reference. Only in builds with CUDA (TILESCOPE_HAVE_CUDA); errors as
// launch_attention's (ConfigError, InputError, LaunchError).
#pragma once

#include "kernels/launcher.h"

namespace ts {

struct GpuTiming {
  double ms_per_run = 0.0;  // mean over the timed runs (every kernel of the run)
  int runs = 0;
  LaunchOutcome outcome;
};

GpuTiming time_on_gpu(const LaunchRequest& request, const AttentionInputs& inputs, int warmup,
                      int runs);

}  // namespace ts
