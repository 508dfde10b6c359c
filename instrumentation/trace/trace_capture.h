// What a caller asks to be traced (TraceRequest) and what a launch hands back
// (CapturedEvents): the host-side ends of the probe API. Host-only.
//
// Flow: the launcher turns a TraceRequest into a TraceDeviceView (buffers where the kernel
// runs, and the per-block slot table that applies the filters), runs the kernels, and copies
// the recorded events back into CapturedEvents, which the trace file writer stores.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "instrumentation/trace/trace_event.h"

namespace ts {

// Capture filters, applied where events are produced (a filtered-out block records nothing).
// Ranges are half-open [begin, end).
struct TraceFilter {
  int64_t batch_begin = 0, batch_end = std::numeric_limits<int64_t>::max();
  int64_t head_begin = 0, head_end = std::numeric_limits<int64_t>::max();
  int64_t q_tile_begin = 0, q_tile_end = std::numeric_limits<int64_t>::max();
  uint32_t stage_mask = kAllStages;

  bool keeps(int64_t batch, int64_t head, int64_t q_tile) const {
    return batch >= batch_begin && batch < batch_end && head >= head_begin && head < head_end &&
           q_tile >= q_tile_begin && q_tile < q_tile_end;
  }
  bool keeps(Stage stage) const { return (stage_mask & stage_bit(stage)) != 0u; }
  bool keeps_pair(int64_t batch, int64_t head) const {
    return batch >= batch_begin && batch < batch_end && head >= head_begin && head < head_end;
  }
};

struct TraceRequest {
  bool enabled = false;
  int64_t capacity_events = int64_t{1} << 20;  // events the buffer may hold; the rest are dropped
  TraceFilter filter;
};

// The recorded events, in the kernels' own order (slot order), with their payloads:
//   m[i * block_m + r], l[i * block_m + r], o[(i * block_m + r) * head_dim + c]
// Only the first `headers[i].rows` rows of an event are meaningful.
struct CapturedEvents {
  int32_t block_m = 0;
  int32_t block_n = 0;
  int32_t head_dim = 0;
  std::vector<EventHeader> headers;
  std::vector<float> m, l, o;
  uint64_t dropped = 0;         // events that did not fit the capacity
  uint64_t requested = 0;       // events the filters kept (recorded + dropped)

  size_t size() const { return headers.size(); }
};

}  // namespace ts
