// Compile-time facts of a kernel build: whether it has probes, whether it has the faults'
// code, and the run-time fault check that only the faulty build can make true.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/trace/trace_event.h"
#include "kernels/kernel_stages.h"
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

// An event's header as our kernels fill it: query head and the kv head it read, keys
// [key_begin, key_end) (key indices), block and step in the block's own order.
__device__ __forceinline__ EventHeader state_header(int32_t stage, int32_t convention, int32_t batch,
                                                    int32_t head, int32_t kv_head, int64_t q_begin,
                                                    int32_t rows, int64_t key_begin, int64_t key_end,
                                                    int32_t split, int32_t step, int64_t block) {
  EventHeader h{};
  h.stage = stage;
  h.convention = convention;
  h.batch = batch;
  h.head = head;
  h.kv_head = kv_head;
  h.q_begin = static_cast<int32_t>(q_begin);
  h.rows = rows;
  h.split = split;
  h.step = step;
  h.block = static_cast<int32_t>(block);
  h.where = -1;
  h.num_key_ranges = 1;
  h.keys[0] = KeyRange{static_cast<int32_t>(key_begin), static_cast<int32_t>(key_end)};
  return h;
}

// The first key of kv tile `tile`, clipped to the sequence (the end of the last tile).
__device__ __forceinline__ int64_t tile_key(int64_t tile, int block_n, int64_t seq_kv) {
  const int64_t key = tile * block_n;
  return key < seq_kv ? key : seq_kv;
}

}  // namespace ts::device
