// Which event is which, and which events a run should hold: an event's identity (stage,
// batch, head, query tile, split, step), its place in the kernels' own order, the kv tiles the
// tiling says it covers, and the events a trace of some tiles and stages should contain — so
// that an event the kernel never wrote (a split with no partial) is reported as missing.
//
// The kernels' own order: Split-K's partial pass (blocks by batch, head, query tile, split)
// runs before the reduce pass (blocks by batch, head, query tile: one event per merged split,
// then the final output); FA-1 blocks (batch, head, query tile) record one event per kv tile,
// then the final output. Events of one block follow their own order; blocks of one pass follow
// the launch's block order.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "instrumentation/trace/trace_event.h"
#include "base/attention_config.h"
#include "kernels/tiling.h"

namespace ts {

struct EventKey {
  int32_t stage = 0;
  int32_t batch = 0, head = 0, q_tile = 0;
  int32_t split = -1;  // partial: its split; reduce: the split just merged; else -1
  int32_t step = 0;    // fa1.step: the kv tile; reduce: the split; else 0

  friend auto operator<=>(const EventKey&, const EventKey&) = default;
};

EventKey event_key(const EventHeader& h);

// A (batch, head, query tile): the unit the reference computes and the analysis works on.
struct TileId {
  int32_t batch = 0, head = 0, q_tile = 0;
  friend auto operator<=>(const TileId&, const TileId&) = default;
};

// Sort key of the kernels' own order (see above); smaller runs first.
using OrderKey = std::tuple<int32_t, int32_t, int32_t, int32_t, int64_t>;
OrderKey order_key(const EventKey& key, const Tiling& tiling);

// The kv tiles an event covers according to the tiling (not to its header's claim):
// fa1.step t: [0, t + 1); partial s: the split's tiles; reduce after split s: [0, end of s);
// final: every tile the query tile sees.
KvTileRange expected_kv_range(const EventKey& key, const Tiling& tiling);

// Convention the reference uses for a stage: normalised for the final output, else
// unnormalised.
Convention expected_convention(Stage stage);

// Why an event cannot belong to this run ("" when it can): a stage the kernel does not have,
// coordinates outside the config or tiling, rows that differ from the query tile's.
std::string event_problem(const EventHeader& h, const AttentionConfig& config, const Tiling& tiling);

// Stages a kernel records.
uint32_t kernel_stage_mask(KernelKind kernel);

// Every event a full trace of `tiles` (sorted) holds for the stages in `stage_mask`, in the
// kernels' own order.
std::vector<EventKey> expected_events(const Tiling& tiling, std::span<const TileId> tiles,
                                      uint32_t stage_mask);

std::string stage_name(int32_t stage);  // "fa1.step", ... or "stage N"

// Indices of `headers` sorted into the kernels' own order (stable: a trace already in that order
// comes back as 0, 1, 2, ...): the order a stepping UI walks the events in.
std::vector<size_t> kernel_order(std::span<const EventHeader> headers, const Tiling& tiling);

}  // namespace ts
