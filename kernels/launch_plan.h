// What a launch will do, decided on the host before anything runs, and shared by both
// backends so that they cannot disagree: the resolved config and tiling, the kernel variant,
// each kernel's grid and shared memory, the buffer sizes, and — when tracing — the slot table
// that places every event a block will record (filters applied, in the kernels' own order:
// block after block, and within a block in the order its stages occur).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "instrumentation/trace/trace_capture.h"
#include "base/attention_config.h"
#include "kernels/attention_params.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_stages.h"
#include "kernels/tiling.h"

namespace ts {

struct PlannedKernel {
  KernelStage stage = KernelStage::fa1;
  uint32_t grid_x = 1, grid_y = 1, grid_z = 1;
  size_t smem_bytes = 0;
  // When tracing: [block linear index][num_stages] -> first slot of the block's events of that
  // stage, or -1 (filtered out, or a stage the block does not have). Empty otherwise.
  std::vector<int64_t> slot_base;

  // When tracing: the blocks that record an event of some stage (their slot_base not all -1).
  uint64_t recording_blocks = 0;
  // The build this kernel launches: the plan's variant, except that a traced kernel none of whose
  // blocks records (every one filtered out) launches the plain build, so that tracing off costs
  // nothing in any kernel, whatever its probes' code does to ptxas's schedule of the plain path.
  KernelVariant variant = KernelVariant::plain;

  uint64_t blocks() const { return uint64_t{grid_x} * grid_y * grid_z; }
  // Which of a traced build's two kernels (kernels/kernel_registry.h) a launch of this kernel
  // runs: the recording kernel where some block records, the other where some block does not.
  bool runs_recording_kernel() const { return variant == KernelVariant::traced && recording_blocks > 0; }
  bool runs_other_kernel() const { return variant != KernelVariant::traced || recording_blocks < blocks(); }
};

struct LaunchPlan {
  AttentionConfig config;  // num_splits resolved
  Tiling tiling;
  KernelVariant variant = KernelVariant::plain;
  std::vector<PlannedKernel> kernels;  // in launch order (Split-K: partial, then reduce, unless below)
  std::vector<StageInfo> stages;       // the kernel's stage table (kernels/kernel_stages.h)

  int64_t o_elements = 0;        // batch * heads * seq_q * head_dim
  int64_t lse_elements = 0;      // batch * heads * seq_q
  int64_t partial_rows = 0;      // Split-K: batch * heads * seq_q * num_splits; else 0
  // Split-K at one split, no fault built in and no event of the reduce recorded: the partial
  // kernel writes O and LSE as well as its buffers, and the reduce, which would only divide by
  // l, is not launched (its launch and pass were 0.3-0.5% of a decode: docs/perf.md, "Split-K
  // decode: one split writes the output"). Its output is the reduce's bit for bit.
  bool partial_writes_output = false;

  bool tracing = false;
  bool tile_events = false;      // Split-K: a `splitk.tile` event after every kv tile
  TraceFilter filter;            // the request's, applied by the slot table
  int64_t trace_requested = 0;   // events the filters keep
  int64_t trace_slots = 0;       // events the buffer holds: min(requested, capacity)
  int32_t event_rows = 0;        // rows of an event's payload (block_m)

  uint64_t total_blocks() const;
  // Bytes of the buffers a backend allocates for outputs, partials and the trace.
  size_t output_bytes() const;
  size_t trace_bytes() const;
};

// The variant a config and trace request need: faulty when a fault is selected, else traced
// when tracing, else plain.
KernelVariant variant_for(const AttentionConfig& config, bool tracing);

// Whether a Split-K trace records the running state after every kv tile when the request does
// not say: yes while the trace filters keep at most kTileEventsByDefaultLimit (batch, head, query
// tile, kv tile) states of the run, so small runs and narrow traces of big ones can be stepped tile
// by tile and wide traces of big ones stay small.
bool tile_events_by_default(const AttentionConfig& config, const Tiling& tiling, const TraceFilter& filter = {});
inline constexpr int64_t kTileEventsByDefaultLimit = int64_t{1} << 16;

// Throws ConfigError (invalid config, a grid the GPU cannot launch) or LaunchError (too_large:
// a trace buffer over kMaxTraceBytes). `tile_events`: nullopt for tile_events_by_default.
LaunchPlan plan_launch(const AttentionConfig& config, int sm_count, const TraceRequest& trace,
                       std::optional<bool> tile_events = std::nullopt);

inline constexpr size_t kMaxTraceBytes = size_t{16} << 30;

// Sizes, strides (contiguous [batch, heads, seq, head_dim]), tiling and fault; no pointers.
AttentionParams base_params(const LaunchPlan& plan);

// Where a backend put the trace buffers (its device memory on the GPU).
struct TraceBuffers {
  EventHeader* headers = nullptr;
  float *m = nullptr, *l = nullptr, *o = nullptr;
  unsigned long long* dropped = nullptr;
};
// The view the kernel of `kernel` gets (slot_table: that kernel's slot_base where the kernel
// runs); an empty view when the plan does not trace.
TraceView trace_view(const LaunchPlan& plan, const PlannedKernel& kernel, const TraceBuffers& buffers,
                     const int64_t* slot_table);

// The event a block will record in its `index`-th slot of `stage`, as the plan places it (its
// coordinates and keys; no payload, where or time): what a slot the kernel left unwritten was
// meant to hold.
EventHeader planned_event(const LaunchPlan& plan, const PlannedKernel& kernel, uint64_t block, int32_t stage,
                          int32_t index);

// The events of a finished launch, from the trace buffers as the kernels left them; slots whose
// header still has the poison stage -1 were never written: their planned events are listed as
// missing.
CapturedEvents collect_events(const LaunchPlan& plan, const EventHeader* headers, const float* m,
                              const float* l, const float* o, uint64_t dropped);

}  // namespace ts
