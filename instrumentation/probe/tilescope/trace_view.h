// What a kernel is handed to record events: the trace buffer's device view, passed by value (a
// kernel argument or a field of the kernel's params) or set into a `__device__` symbol by the
// recorder (TILESCOPE_TRACE_SYMBOL in probe.h). Plain structs, the same bytes on the GPU, on
// the CPU and in the host recorder; part of the installed SDK.
//
// Slots. An event needs a slot in the buffer before its threads can write it. A kernel that
// knows how many events each block records gives a plan, and every thread of a block computes
// the same slot with no communication at all:
//   - a table (our launcher's): slot = slot_base[block * num_stages + stage] + index, where
//     index numbers the block's events of that stage; a negative base means "not recorded"
//     (filtered out). The buffer is then in the kernel's own order whatever order the blocks
//     ran in.
//   - uniform: slot = block * events_per_block + index (slot_base == nullptr,
//     events_per_block > 0).
// Without a plan, the thread (or the warp's first lane) that writes an event takes the next
// slot from an atomic counter: no block-wide synchronisation is added either way — a probe that
// synchronised the block would hide the very races tilescope looks for. A slot past the
// capacity is not written; the event is counted in `dropped`, exactly once.
#pragma once

#include <cstdint>

#include "tilescope/event.h"

namespace tilescope {

// Capture filters, applied where events are made: an event is kept when its batch and query
// head are in range, its query rows overlap [query_begin, query_end), and its stage's bit is
// set (stages 64 and up are always kept). Ranges are half-open.
struct TraceFilter {
  int32_t batch_begin = 0, batch_end = INT32_MAX;
  int32_t head_begin = 0, head_end = INT32_MAX;
  int32_t query_begin = 0, query_end = INT32_MAX;
  uint64_t stage_mask = ~uint64_t{0};
};

struct TraceView {
  EventHeader* headers = nullptr;  // [capacity]; nullptr: tracing is off (one uniform branch)
  float* m = nullptr;              // [capacity][max_rows]
  float* l = nullptr;              // [capacity][max_rows]
  float* o = nullptr;              // [capacity][max_rows][head_dim]
  int64_t capacity = 0;            // events the buffer holds
  unsigned long long* next_slot = nullptr;  // the unplanned events' slot counter
  unsigned long long* dropped = nullptr;    // events that found no slot
  const int64_t* slot_base = nullptr;       // planned by table: [blocks][num_stages]
  int32_t num_stages = 0;                   // the stage table's length
  int32_t events_per_block = 0;             // planned uniformly (slot_base == nullptr)
  int32_t max_rows = 0;                     // payload rows of an event
  int32_t head_dim = 0;                     // payload columns of an O row
  TraceFilter filter;
};

}  // namespace tilescope
