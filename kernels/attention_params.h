// The one plain struct the attention kernels see (flash-attention's habit: bindings convert
// into it, kernels read nothing else). Filled by the launchers from an AttentionConfig and a
// Tiling; the same bytes on the GPU and on the CPU SIMT runtime.
//
// Layouts (elements, row-major, strides given so the kernels do not assume contiguity):
//   q       [batch, heads,    seq_q,  head_dim]  input dtype
//   k, v    [batch, heads_kv, seq_kv, head_dim]  input dtype; query head h reads kv head
//                                                kv_head_of(h, heads, heads_kv) (attention_rules.h)
//   o       [batch, heads,    seq_q,  head_dim]  input dtype
//   lse     [batch, heads, seq_q]             float32 (natural log; -inf for a row that sees no key)
//   Split-K partial buffers, float32, one row per (query, split) so that the reduce reads the
//   splits of a query contiguously:
//   partial_o [batch, heads, seq_q, num_splits, head_dim]   unnormalised O of the split
//   partial_m [batch, heads, seq_q, num_splits]             max scaled score of the split
//   partial_l [batch, heads, seq_q, num_splits]             sum of exp(score - m) of the split
#pragma once

#include <cstdint>

#include "instrumentation/trace/trace_event.h"
#include "kernels/tile_shapes.h"
#include "tilescope/trace_view.h"

namespace ts {

// Which build of a kernel runs. `plain` has no probes at all (BlockProbe<false>); `traced`
// has probes and no fault code; `faulty` has probes and reads AttentionParams::fault at run
// time. Only `faulty` contains the faults' code, so the correct kernels pay nothing for it.
enum class KernelVariant : int32_t { plain = 0, traced = 1, faulty = 2 };

struct AttentionParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  float* partial_o = nullptr;
  float* partial_m = nullptr;
  float* partial_l = nullptr;

  int64_t q_batch_stride = 0, q_head_stride = 0, q_row_stride = 0;
  int64_t k_batch_stride = 0, k_head_stride = 0, k_row_stride = 0;
  int64_t v_batch_stride = 0, v_head_stride = 0, v_row_stride = 0;
  int64_t o_batch_stride = 0, o_head_stride = 0, o_row_stride = 0;

  int32_t batch = 0;
  int32_t heads = 0;          // query heads
  int32_t heads_kv = 0;       // kv heads (divides heads)
  int32_t seq_q = 0;
  int32_t seq_kv = 0;
  int32_t head_dim = 0;
  KernelMask mask;            // causal and sliding window (kernels/tile_shapes.h)
  float scale = 0.0f;         // softmax scale applied to q.k
  float softcap = 0.0f;       // > 0: scaled scores s -> softcap * tanh(s / softcap); 0: off
  float softcap_inv = 0.0f;   // 1 / softcap: the kernels multiply (a division would be a call)

  // Tiling (see kernels/tiling.h).
  int32_t block_m = 0;
  int32_t block_n = 0;
  int32_t num_q_tiles = 0;
  int32_t num_kv_tiles = 0;
  int32_t num_splits = 1;
  int32_t kv_tiles_per_split = 0;

  int32_t fault = 0;          // ts::Fault; read by KernelVariant::faulty only
  // Split-K partial: record the running state after every kv tile ("splitk.tile" events).
  int32_t tile_events = 0;
  // Split-K partial at one split: also write O and LSE, what the reduce would (LaunchPlan::
  // partial_writes_output says when, and why the reduce is then not launched).
  int32_t partial_writes_output = 0;
  tilescope::TraceView trace;  // headers == nullptr: no tracing
};

}  // namespace ts
