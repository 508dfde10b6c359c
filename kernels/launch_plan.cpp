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
    case KernelStage::fa2: return "fa2_forward";
    case KernelStage::splitk2_partial: return "splitk2_partial";
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

size_t LaunchPlan::trace_bytes() const {  // headers, m, l and O of every slot
  const size_t rows = static_cast<size_t>(event_rows), d = static_cast<size_t>(config.head_dim);
  return static_cast<size_t>(trace_slots) * (sizeof(EventHeader) + rows * (d + 2) * sizeof(float));
}

namespace {

// A block's coordinates, from its linear index in its kernel's grid.
struct BlockCoords {
  int32_t batch = 0, head = 0, q_tile = 0, split = -1;
};
BlockCoords block_coords(const PlannedKernel& k, const Tiling& t, uint64_t b) {
  BlockCoords c;
  const auto x = static_cast<int64_t>(b % k.grid_x);
  c.head = static_cast<int32_t>((b / k.grid_x) % k.grid_y);
  c.batch = static_cast<int32_t>(b / (uint64_t{k.grid_x} * k.grid_y));
  if (k.stage == KernelStage::splitk_partial || k.stage == KernelStage::splitk2_partial) {
    c.q_tile = static_cast<int32_t>(x / t.num_splits);
    c.split = static_cast<int32_t>(x % t.num_splits);
  } else {
    c.q_tile = static_cast<int32_t>(x);
  }
  return c;
}

// The kv tiles a Split-K partial block visits (kernels/tile_shapes.h: splitk_visited_tiles), of
// either Split-K kernel.
KvTileRange partial_tiles_visited(const LaunchPlan& plan, const BlockCoords& c) {
  const Tiling& t = plan.tiling;
  const bool guard = !(plan.variant == KernelVariant::faulty && plan.config.fault == Fault::masked_nan);
  return splitk_visited_tiles(t.split_kv_tiles(c.split), t.kv_tiles_visited(c.q_tile), guard);
}

// The stages a block records, in the order it records them, with their event counts.
struct StageCount {
  int32_t stage;
  int32_t count;
};
std::vector<StageCount> events_of_block(const LaunchPlan& plan, const PlannedKernel& k, const BlockCoords& c) {
  const Tiling& t = plan.tiling;
  switch (k.stage) {
    case KernelStage::fa1:
      return {{kFa1StepStage, t.kv_tiles_visited(c.q_tile).size()}, {kFa1FinalStage, 1}};
    case KernelStage::fa2:
      return {{kFa2StepStage, t.kv_tiles_visited(c.q_tile).size()}, {kFa2FinalStage, 1}};
    case KernelStage::splitk_partial:
    case KernelStage::splitk2_partial:
      return {{kSplitkTileStage, plan.tile_events ? partial_tiles_visited(plan, c).size() : 0},
              {kSplitkPartialStage, 1}};
    case KernelStage::splitk_reduce:
      return {{kSplitkReduceStage, t.num_splits}, {kSplitkFinalStage, 1}};
  }
  return {};
}

// Calls f(slot, block, stage, index) for every planned event, in slot order.
template <typename F>
void for_each_planned_event(const LaunchPlan& plan, F&& f) {
  for (const PlannedKernel& k : plan.kernels) {
    if (k.slot_base.empty()) continue;
    const auto num_stages = static_cast<uint64_t>(plan.stages.size());
    for (uint64_t b = 0; b < k.blocks(); ++b) {
      const BlockCoords c = block_coords(k, plan.tiling, b);
      for (const StageCount& sc : events_of_block(plan, k, c)) {
        const int64_t base = k.slot_base[b * num_stages + static_cast<uint64_t>(sc.stage)];
        if (base < 0) continue;
        for (int32_t i = 0; i < sc.count; ++i) f(base + i, k, b, sc.stage, i);
      }
    }
  }
}

// Lays out the slots of every kernel's blocks, in launch order, and counts the blocks that record;
// returns the events kept.
int64_t assign_slots(LaunchPlan& plan) {
  int64_t next = 0;
  const Tiling& t = plan.tiling;
  const auto num_stages = static_cast<uint64_t>(plan.stages.size());
  for (auto& k : plan.kernels) {
    k.slot_base.assign(k.blocks() * num_stages, -1);
    k.recording_blocks = 0;
    for (uint64_t b = 0; b < k.blocks(); ++b) {
      const BlockCoords c = block_coords(k, t, b);
      const int64_t q_begin = int64_t{c.q_tile} * t.block_m;
      bool records = false;
      for (const StageCount& sc : events_of_block(plan, k, c)) {
        if (sc.count == 0 ||
            !filter_keeps(plan.filter, sc.stage, c.batch, c.head, q_begin, t.rows_in_q_tile(c.q_tile)))
          continue;
        k.slot_base[b * num_stages + static_cast<uint64_t>(sc.stage)] = next;
        next += sc.count;
        records = true;
      }
      k.recording_blocks += records;
    }
  }
  return next;
}

int32_t key_of(const Tiling& t, int64_t tile) {
  return static_cast<int32_t>(std::min<int64_t>(tile * t.block_n, t.seq_kv));
}

}  // namespace

bool tile_events_by_default(const AttentionConfig& config, const Tiling& tiling, const TraceFilter& filter) {
  // Indices of [0, n) in [begin, end).
  const auto kept = [](int64_t n, int64_t begin, int64_t end) {
    return std::max<int64_t>(0, std::min(n, end) - std::max<int64_t>(0, begin));
  };
  // Query tiles holding a row of [query_begin, query_end).
  const int64_t rows_begin = std::max<int64_t>(0, filter.query_begin);
  const int64_t rows_end = std::min<int64_t>(config.seq_q, filter.query_end);
  const int64_t q_tiles =
      rows_end > rows_begin ? (rows_end - 1) / tiling.block_m - rows_begin / tiling.block_m + 1 : 0;
  return kept(config.batch, filter.batch_begin, filter.batch_end) * kept(config.heads, filter.head_begin, filter.head_end) *
             q_tiles * int64_t{tiling.num_kv_tiles} <=
         kTileEventsByDefaultLimit;
}

EventHeader planned_event(const LaunchPlan& plan, const PlannedKernel& k, uint64_t block, int32_t stage,
                          int32_t index) {
  const Tiling& t = plan.tiling;
  const BlockCoords c = block_coords(k, t, block);
  EventHeader h{};
  h.stage = stage;
  h.convention = 0;
  h.batch = c.batch;
  h.head = c.head;
  h.kv_head = static_cast<int32_t>(kv_head_of<int64_t>(c.head, plan.config.heads, plan.config.kv_heads()));
  h.q_begin = c.q_tile * t.block_m;
  h.rows = t.rows_in_q_tile(c.q_tile);
  h.split = -1;
  h.step = index;
  h.block = static_cast<int32_t>(block);
  h.where = -1;
  h.num_key_ranges = 1;
  // FA-1 and FA-2 record the same stages at the same indices (kernel_stages.h).
  static_assert(kFa1StepStage == kFa2StepStage && kFa1FinalStage == kFa2FinalStage);
  const bool fa1 = k.stage == KernelStage::fa1 || k.stage == KernelStage::fa2;
  if (stage == (fa1 ? kFa1FinalStage : kSplitkFinalStage)) {
    h.convention = kNormalized;
    h.keys[0] = {0, static_cast<int32_t>(t.seq_kv)};
    h.step = fa1 ? t.kv_tiles_visited(c.q_tile).size() : t.num_splits;
  } else if (fa1) {  // fa1.step after the block's `index`-th kv tile: the state over keys [0, its end)
    h.keys[0] = {0, key_of(t, t.kv_tiles_visited(c.q_tile).begin + index + 1)};
  } else if (stage == kSplitkTileStage || stage == kSplitkPartialStage) {
    const KvTileRange range = t.split_kv_tiles(c.split);
    h.split = c.split;
    // Over the split's keys (those a block skips are masked for all its rows): after the block's
    // `index`-th visited tile, up to that tile's end; the partial, all of them.
    if (stage == kSplitkTileStage) {
      h.keys[0] = {key_of(t, range.begin), key_of(t, partial_tiles_visited(plan, c).begin + index + 1)};
    } else {
      h.keys[0] = {key_of(t, range.begin), key_of(t, range.end)};
      h.step = plan.tile_events ? partial_tiles_visited(plan, c).size() : 0;
    }
  } else {  // splitk.reduce after merging split `index`
    h.split = index;
    h.keys[0] = {0, key_of(t, t.split_kv_tiles(index).end)};
  }
  return h;
}

LaunchPlan plan_launch(const AttentionConfig& config, int sm_count, const TraceRequest& trace,
                       std::optional<bool> tile_events) {
  LaunchPlan plan;
  plan.tiling = make_tiling(config, sm_count);  // validates the config
  plan.config = config;
  plan.config.num_splits = plan.tiling.num_splits;
  plan.variant = variant_for(config, trace.enabled);
  plan.stages = kernel_stage_table(config);
  const Tiling& t = plan.tiling;
  const int d = static_cast<int>(config.head_dim);
  const auto heads = static_cast<uint32_t>(config.heads);
  const auto batch = static_cast<uint32_t>(config.batch);

  if (config.kernel == KernelKind::fa1) {
    plan.kernels.push_back({KernelStage::fa1, static_cast<uint32_t>(t.num_q_tiles), heads, batch,
                            fa1_smem_bytes(d), {}});
  } else if (config.kernel == KernelKind::fa2) {
    plan.kernels.push_back({KernelStage::fa2, static_cast<uint32_t>(t.num_q_tiles), heads, batch,
                            static_cast<size_t>(fa2_smem_bytes(d, static_cast<int>(dtype_size(config.dtype)),
                                                                    plan.variant == KernelVariant::faulty)),
                            {}});
  } else {  // splitk, splitk2: the partial pass, then the reduce
    const bool fa2_partial = config.kernel == KernelKind::splitk2;
    const int64_t partial_x = int64_t{t.num_q_tiles} * t.num_splits;
    if (partial_x > std::numeric_limits<int32_t>::max())
      throw ConfigError("num_splits", "query tiles x splits = " + std::to_string(partial_x) +
                                          " exceeds the grid's 2^31-1 blocks; use fewer splits");
    const int elem_bytes = static_cast<int>(dtype_size(config.dtype));
    plan.kernels.push_back(
        {fa2_partial ? KernelStage::splitk2_partial : KernelStage::splitk_partial, static_cast<uint32_t>(partial_x),
         heads, batch,
         static_cast<size_t>(fa2_partial ? fa2_smem_bytes(d, elem_bytes, plan.variant == KernelVariant::faulty)
                                         : splitk_partial_smem_bytes(d, elem_bytes)),
         {}});
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
    plan.filter = trace.filter;
    plan.tile_events = splits_kv(config.kernel) &&
                       tile_events.value_or(tile_events_by_default(plan.config, t, plan.filter));
    plan.trace_requested = assign_slots(plan);
    plan.trace_slots = std::min(plan.trace_requested, trace.capacity_events);
    if (plan.trace_bytes() > kMaxTraceBytes)
      throw LaunchError(LaunchFailure::too_large,
                        "the trace would need " + std::to_string(plan.trace_bytes() >> 20) +
                            " MiB (" + std::to_string(plan.trace_slots) +
                            " events); capture fewer with the batch/head/query-tile/stage "
                            "filters or a smaller capacity");
  }
  if (config.kernel == KernelKind::splitk && t.num_splits == 1 && plan.variant != KernelVariant::faulty) {
    if (plan.kernels.back().recording_blocks == 0) {  // the reduce records nothing
      plan.partial_writes_output = true;
      plan.kernels.pop_back();
    }
  }
  for (PlannedKernel& k : plan.kernels)
    k.variant = plan.variant == KernelVariant::traced && k.recording_blocks == 0 ? KernelVariant::plain : plan.variant;
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
  p.k_batch_stride = p.v_batch_stride = c.kv_heads() * c.seq_kv * c.head_dim;
  p.batch = static_cast<int32_t>(c.batch);
  p.heads = static_cast<int32_t>(c.heads);
  p.heads_kv = static_cast<int32_t>(c.kv_heads());
  p.seq_q = static_cast<int32_t>(c.seq_q);
  p.seq_kv = static_cast<int32_t>(c.seq_kv);
  p.head_dim = static_cast<int32_t>(c.head_dim);
  p.mask = t.mask();
  p.scale = static_cast<float>(c.effective_scale());
  p.softcap = static_cast<float>(c.softcap);
  p.softcap_inv = c.softcap > 0.0 ? static_cast<float>(1.0 / c.softcap) : 0.0f;
  p.block_m = t.block_m;
  p.block_n = t.block_n;
  p.num_q_tiles = t.num_q_tiles;
  p.num_kv_tiles = t.num_kv_tiles;
  p.num_splits = t.num_splits;
  p.kv_tiles_per_split = t.kv_tiles_per_split;
  p.fault = static_cast<int32_t>(c.fault);
  p.tile_events = plan.tile_events ? 1 : 0;
  p.partial_writes_output = plan.partial_writes_output ? 1 : 0;
  return p;
}

TraceView trace_view(const LaunchPlan& plan, const PlannedKernel&, const TraceBuffers& b, const int64_t* slot_table) {
  TraceView v;
  if (!plan.tracing) return v;
  v.headers = b.headers;
  v.m = b.m;
  v.l = b.l;
  v.o = b.o;
  v.capacity = plan.trace_slots;
  v.dropped = b.dropped;
  v.slot_base = slot_table;
  v.num_stages = static_cast<int32_t>(plan.stages.size());
  v.max_rows = plan.event_rows;
  v.head_dim = static_cast<int32_t>(plan.config.head_dim);
  v.filter = plan.filter;
  return v;
}

CapturedEvents collect_events(const LaunchPlan& plan, const EventHeader* headers, const float* m,
                              const float* l, const float* o, uint64_t dropped) {
  CapturedEvents ev;
  ev.max_rows = plan.event_rows;
  ev.head_dim = static_cast<int32_t>(plan.config.head_dim);
  ev.stages = plan.stages;
  ev.dropped = dropped;
  ev.requested = static_cast<uint64_t>(plan.trace_requested);
  size_t written = 0;
  for (int64_t s = 0; s < plan.trace_slots; ++s)
    if (headers[s].stage >= 0) ++written;
  ev.headers.reserve(written);
  for (int64_t s = 0; s < plan.trace_slots; ++s)
    if (headers[s].stage >= 0) ev.headers.push_back(headers[s]);  // the others were never written:
  if (written < static_cast<size_t>(plan.trace_slots))              // listed as missing
    for_each_planned_event(plan, [&](int64_t slot, const PlannedKernel& k, uint64_t block, int32_t stage, int32_t i) {
      if (slot < plan.trace_slots && headers[slot].stage < 0) ev.missing.push_back(planned_event(plan, k, block, stage, i));
    });
  // Payloads compact: each event keeps the rows of its slot up to the most any event holds (a
  // decode run's events hold 1 row of a block_m-row slot).
  int32_t kept = 0;
  for (const auto* list : {&ev.headers, &ev.missing})
    for (const EventHeader& h : *list) kept = std::max(kept, std::min(h.rows, plan.event_rows));
  if (ev.headers.empty() && ev.missing.empty()) kept = plan.event_rows;
  ev.max_rows = kept;
  const size_t rows = static_cast<size_t>(plan.event_rows), keep = static_cast<size_t>(kept);
  const size_t d = static_cast<size_t>(plan.config.head_dim);
  ev.m.resize(written * keep);
  ev.l.resize(written * keep);
  ev.o.resize(written * keep * d);
  size_t e = 0;
  for (int64_t s = 0; s < plan.trace_slots; ++s) {
    if (headers[s].stage < 0) continue;
    const size_t at = static_cast<size_t>(s);
    std::copy_n(m + at * rows, keep, ev.m.data() + e * keep);
    std::copy_n(l + at * rows, keep, ev.l.data() + e * keep);
    std::copy_n(o + at * rows * d, keep * d, ev.o.data() + e * keep * d);
    ++e;
  }
  return ev;
}

}  // namespace ts
