// Compile-time facts of a kernel build: whether it has probes, whether it has the faults'
// code, and the run-time fault check that only the faulty build can make true.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/trace/trace_event.h"
#include "base/attention_config.h"
#include "kernels/attention_params.h"

namespace ts::device {

template <KernelVariant kVariant>
struct VariantTraits {
  static constexpr bool kTrace = kVariant != KernelVariant::plain;
  static constexpr bool kFaulty = kVariant == KernelVariant::faulty;

  // True when this build has faults and the launch selected `f`; a constant false otherwise,
  // so the correct builds compile the faults' branches away.
  __device__ __forceinline__ static bool has(const AttentionParams& p, Fault f) {
    if constexpr (kFaulty) return p.fault == static_cast<int32_t>(f);
    (void)p;
    (void)f;
    return false;
  }
};

// Linear index of this block in its launch, as the launcher's slot table counts them.
__device__ __forceinline__ int64_t block_linear_index() {
  return static_cast<int64_t>(blockIdx.x) +
         static_cast<int64_t>(gridDim.x) *
             (static_cast<int64_t>(blockIdx.y) + static_cast<int64_t>(gridDim.y) * blockIdx.z);
}

__device__ __forceinline__ EventHeader event_header(Stage stage, Convention convention,
                                                    int32_t batch, int32_t head, int32_t q_tile,
                                                    int32_t kv_begin, int32_t kv_end,
                                                    int32_t split, int32_t step, int32_t rows,
                                                    int64_t block) {
  EventHeader h{};
  h.stage = static_cast<int32_t>(stage);
  h.convention = static_cast<int32_t>(convention);
  h.batch = batch;
  h.head = head;
  h.q_tile = q_tile;
  h.kv_tile_begin = kv_begin;
  h.kv_tile_end = kv_end;
  h.split = split;
  h.step = step;
  h.rows = rows;
  h.block = static_cast<int32_t>(block);
  return h;
}

}  // namespace ts::device
