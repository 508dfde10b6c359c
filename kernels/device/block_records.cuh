// Whether a block of a traced launch records anything: the traced builds that are two kernels
// (kernels/kernel_registry.h, find_recording_kernel; fa2_forward.cuh's fa2_forward_kernel says
// why) run the traced block in the one only where it does, the plain build's code in the other
// only where it does not.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "kernels/attention_params.h"
#include "kernels/device/kernel_traits.cuh"
#include "tilescope/probe.h"

namespace ts::device {

// Whether this block of a traced launch records an event of any of `stages` (block-uniform: the
// launcher's slot table says it per block).
template <typename... Stages>
__device__ __forceinline__ bool block_records_any(const AttentionParams& p, Stages... stages) {
  const tilescope::BlockProbe<true> probe(p.trace, block_linear_index());
  return (probe.wants(stages) || ...);
}

}  // namespace ts::device
