// test_recorder's kernel with the probes compiled out: TILESCOPE_TRACE is 0 in this file.
#define TILESCOPE_TRACE 0

#include <cuda_runtime.h>

#include <tilescope/portable.h>
#include <tilescope/probe.h>

#include "tests/sdk/probes_compiled_out.h"

namespace tilescope_test {
namespace {

static_assert(!tilescope::kProbesCompiled, "TILESCOPE_TRACE=0 compiles the probes out");

__global__ void call_every_probe(tilescope::TraceView view, int* written) {
  float o[64] = {};
  const tilescope::StateDesc desc = tilescope::state(0, 0, 0, 0, 1).keys(0, 8);
  int n = tilescope::record(view, desc, 0.0f, 1.0f, o) ? 1 : 0;
  if (tilescope::open_warp(view, desc)) ++n;
  if (tilescope::open_planned(view, desc, 0)) ++n;
  atomicAdd(written, n);
}

}  // namespace

int records_with_probes_compiled_out(tilescope::TraceView view) {
  int* written = nullptr;
  if (cudaMalloc(&written, sizeof(int)) != cudaSuccess) return -1;
  cudaMemset(written, 0, sizeof(int));
  TILESCOPE_LAUNCH(call_every_probe, 1, 32)(view, written);
  int n = -1;
  cudaMemcpy(&n, written, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(written);
  return n;
}

}  // namespace tilescope_test
