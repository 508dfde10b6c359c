#include "kernels/launch_plan.h"

#include <algorithm>
#include <limits>
#include <string>

#include "kernels/kernel_smem.h"
#include "kernels/launch_error.h"

namespace ts {

const char* kernel_stage_name(KernelStage stage) {
  switch (stage) {
    case KernelStage::fa1: return "fa1_forward";
    case KernelStage::splitk_partial: return "splitk_partial";
    case KernelStage::splitk_reduce: return "splitk_reduce";
  }
  return "?";
}

KernelVariant variant_for(const AttentionConfig& config, bool tracing) {
  if (config.fault != Fault::none) return KernelVariant::faulty;
  return tracing ? KernelVariant::traced : KernelVariant::plain;
}

uint64_t LaunchPlan::total_blocks() const {
  uint64_t n = 0;
  for (const auto& k : kernels) n += k.blocks();
  return n;
}

size_t LaunchPlan::output_bytes() const {
  const size_t d = static_cast<size_t>(config.head_dim);
  return static_cast<size_t>(o_elements) * dtype_size(config.dtype) +
         static_cast<size_t>(lse_elements) * sizeof(float) +
         static_cast<size_t>(partial_rows) * (d + 2) * sizeof(float);
}

size_t LaunchPlan::trace_bytes() const {
  const size_t rows = static_cast<size_t>(event_rows), d = static_cast<size_t>(config.head_dim);
  return static_cast<size_t>(trace_slots) * (sizeof(EventHeader) + rows * (d + 2) * sizeof(float));
}

namespace {

// Events a block of this kernel records, per stage (the kernels' own counts).
struct BlockEvents {
  int64_t count[kNumStages] = {0, 0, 0, 0};
  Stage order[2] = {Stage::fa1_step, Stage::final_output};  // stages in the order they occur
  int stages = 0;
};

BlockEvents events_of_block(const PlannedKernel& k, const Tiling& t, int64_t q_tile) {
  BlockEvents e;
  switch (k.stage) {
    case KernelStage::fa1:
      e.count[static_cast<int>(Stage::fa1_step)] = t.kv_tiles_visited(q_tile).size();
      e.count[static_cast<int>(Stage::final_output)] = 1;
      e.order[0] = Stage::fa1_step;
      e.order[1] = Stage::final_output;
      e.stages = 2;
      break;
    case KernelStage::splitk_partial:
      e.count[static_cast<int>(Stage::splitk_partial)] = 1;
      e.order[0] = Stage::splitk_partial;
      e.stages = 1;
      break;
    case KernelStage::splitk_reduce:
      e.count[static_cast<int>(Stage::splitk_reduce)] = t.num_splits;
      e.count[static_cast<int>(Stage::final_output)] = 1;
      e.order[0] = Stage::splitk_reduce;
      e.order[1] = Stage::final_output;
      e.stages = 2;
      break;
  }
  return e;
}

// Lays out the slots of every kernel's blocks, in launch order; returns the events kept.
int64_t assign_slots(std::vector<PlannedKernel>& kernels, const Tiling& t, const TraceFilter& f) {
  int64_t next = 0;
  for (auto& k : kernels) {
    k.slot_base.assign(k.blocks() * kNumStages, -1);
    const int64_t splits_in_x = k.stage == KernelStage::splitk_partial ? t.num_splits : 1;
    for (uint64_t b = 0; b < k.blocks(); ++b) {
      const int64_t x = static_cast<int64_t>(b % k.grid_x);
      const int64_t head = static_cast<int64_t>((b / k.grid_x) % k.grid_y);
      const int64_t batch = static_cast<int64_t>(b / (uint64_t{k.grid_x} * k.grid_y));
      const int64_t q_tile = x / splits_in_x;
      if (!f.keeps(batch, head, q_tile)) continue;
      const BlockEvents e = events_of_block(k, t, q_tile);
      for (int s = 0; s < e.stages; ++s) {
        const int stage = static_cast<int>(e.order[s]);
        if (!f.keeps(e.order[s]) || e.count[stage] == 0) continue;
        k.slot_base[b * kNumStages + stage] = next;
        next += e.count[stage];
      }
    }
  }
  return next;
}

}  // namespace

LaunchPlan plan_launch(const AttentionConfig& config, int sm_count, const TraceRequest& trace) {
  LaunchPlan plan;
  plan.tiling = make_tiling(config, sm_count);  // validates the config
  plan.config = config;
  plan.config.num_splits = plan.tiling.num_splits;
  plan.variant = variant_for(config, trace.enabled);
  const Tiling& t = plan.tiling;
  const int d = static_cast<int>(config.head_dim);
  const auto heads = static_cast<uint32_t>(config.heads);
  const auto batch = static_cast<uint32_t>(config.batch);

  if (config.kernel == KernelKind::fa1) {
    plan.kernels.push_back({KernelStage::fa1, static_cast<uint32_t>(t.num_q_tiles), heads, batch,
                            fa1_smem_bytes(d), {}});
  } else {
    const int64_t partial_x = int64_t{t.num_q_tiles} * t.num_splits;
    if (partial_x > std::numeric_limits<int32_t>::max())
      throw ConfigError("num_splits", "query tiles x splits = " + std::to_string(partial_x) +
                                          " exceeds the grid's 2^31-1 blocks; use fewer splits");
    plan.kernels.push_back({KernelStage::splitk_partial, static_cast<uint32_t>(partial_x), heads,
                            batch, splitk_partial_smem_bytes(d), {}});
    plan.kernels.push_back({KernelStage::splitk_reduce, static_cast<uint32_t>(t.num_q_tiles), heads,
                            batch, 0, {}});
    plan.partial_rows = config.batch * config.heads * config.seq_q * t.num_splits;
  }
  plan.o_elements = config.batch * config.heads * config.seq_q * config.head_dim;
  plan.lse_elements = config.batch * config.heads * config.seq_q;
  plan.event_rows = t.block_m;

  if (trace.enabled) {
    if (trace.capacity_events < 0)
      throw ConfigError("trace.capacity_events", "the trace capacity must be >= 0 events");
    plan.tracing = true;
    plan.trace_requested = assign_slots(plan.kernels, t, trace.filter);
    plan.trace_slots = std::min(plan.trace_requested, trace.capacity_events);
    if (plan.trace_bytes() > kMaxTraceBytes)
      throw LaunchError(LaunchFailure::too_large,
                        "the trace would need " + std::to_string(plan.trace_bytes() >> 20) +
                            " MiB (" + std::to_string(plan.trace_slots) +
                            " events); capture fewer with the batch/head/query-tile/stage "
                            "filters or a smaller capacity");
  }
  return plan;
}

AttentionParams base_params(const LaunchPlan& plan) {
  const AttentionConfig& c = plan.config;
  const Tiling& t = plan.tiling;
  AttentionParams p;
  p.q_row_stride = p.k_row_stride = p.v_row_stride = p.o_row_stride = c.head_dim;
  p.q_head_stride = p.o_head_stride = c.seq_q * c.head_dim;
  p.k_head_stride = p.v_head_stride = c.seq_kv * c.head_dim;
  p.q_batch_stride = p.o_batch_stride = c.heads * c.seq_q * c.head_dim;
  p.k_batch_stride = p.v_batch_stride = c.heads * c.seq_kv * c.head_dim;
  p.batch = static_cast<int32_t>(c.batch);
  p.heads = static_cast<int32_t>(c.heads);
  p.seq_q = static_cast<int32_t>(c.seq_q);
  p.seq_kv = static_cast<int32_t>(c.seq_kv);
  p.head_dim = static_cast<int32_t>(c.head_dim);
  p.causal = c.causal ? 1 : 0;
  p.scale = static_cast<float>(c.effective_scale());
  p.block_m = t.block_m;
  p.block_n = t.block_n;
  p.num_q_tiles = t.num_q_tiles;
  p.num_kv_tiles = t.num_kv_tiles;
  p.num_splits = t.num_splits;
  p.kv_tiles_per_split = t.kv_tiles_per_split;
  p.fault = static_cast<int32_t>(c.fault);
  return p;
}

CapturedEvents collect_events(const LaunchPlan& plan, const EventHeader* headers, const float* m,
                              const float* l, const float* o, uint64_t dropped) {
  CapturedEvents ev;
  ev.block_m = plan.tiling.block_m;
  ev.block_n = plan.tiling.block_n;
  ev.head_dim = static_cast<int32_t>(plan.config.head_dim);
  ev.dropped = dropped;
  ev.requested = static_cast<uint64_t>(plan.trace_requested);
  const size_t rows = static_cast<size_t>(plan.event_rows);
  const size_t orow = rows * static_cast<size_t>(plan.config.head_dim);
  size_t written = 0;
  for (int64_t s = 0; s < plan.trace_slots; ++s)
    if (headers[s].stage >= 0) ++written;
  ev.headers.reserve(written);
  ev.m.reserve(written * rows);
  ev.l.reserve(written * rows);
  ev.o.reserve(written * orow);
  for (int64_t s = 0; s < plan.trace_slots; ++s) {
    if (headers[s].stage < 0) continue;  // never written (e.g. a faulty kernel skipped it)
    const size_t at = static_cast<size_t>(s);
    ev.headers.push_back(headers[s]);
    ev.m.insert(ev.m.end(), m + at * rows, m + (at + 1) * rows);
    ev.l.insert(ev.l.end(), l + at * rows, l + (at + 1) * rows);
    ev.o.insert(ev.o.end(), o + at * orow, o + (at + 1) * orow);
  }
  return ev;
}

}  // namespace ts
