// Whether a block of a traced launch records anything: FA-2's traced build runs its traced block
// only where it does, and the plain build's code in every other block (fa2_forward.cuh's
// forward_block_traced says why).
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
