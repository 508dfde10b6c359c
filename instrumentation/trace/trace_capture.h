// What a caller asks to be traced (TraceRequest) and what a launch or a recorder hands back
// (CapturedEvents): the host-side ends of the probe API. Host-only.
//
// Flow: a launcher (ours: kernels/launch_plan.h; a user's: the recorder) turns a TraceRequest
// into a tilescope::TraceView (buffers where the kernel runs, filters, a slot plan or counter),
// runs the kernels, and copies the recorded events back into CapturedEvents, which the trace
// file writer stores.
#pragma once

#include <cstdint>
#include <vector>

#include "instrumentation/trace/trace_event.h"
#include "tilescope/trace_view.h"

namespace ts {

using tilescope::TraceFilter;
using tilescope::TraceView;

// Whether the filters keep an event of this stage, (batch, head) and query rows; the host's
// form of the probes' check (tilescope/probe.h: filter_keeps), for planning slots.
inline bool filter_keeps(const TraceFilter& f, int32_t stage, int64_t batch, int64_t head, int64_t q_begin,
                         int64_t rows) {
  const bool stage_kept = stage >= 64 || ((f.stage_mask >> stage) & 1u) != 0;
  return stage_kept && batch >= f.batch_begin && batch < f.batch_end && head >= f.head_begin &&
         head < f.head_end && q_begin < f.query_end && q_begin + rows > f.query_begin;
}

struct TraceRequest {
  bool enabled = false;
  int64_t capacity_events = int64_t{1} << 20;  // events the buffer may hold; the rest are dropped
  TraceFilter filter;
};

// The recorded events, in the kernels' own order where a plan gave it (else in slot order),
// with their payloads:
//   m[i * max_rows + r], l[i * max_rows + r], o[(i * max_rows + r) * head_dim + c]
// Only the first `headers[i].rows` rows of an event are meaningful.
struct CapturedEvents {
  int32_t max_rows = 0;
  int32_t head_dim = 0;
  std::vector<StageInfo> stages;     // the stage table the events' `stage` indexes
  std::vector<EventHeader> headers;
  std::vector<float> m, l, o;
  std::vector<EventHeader> missing;  // planned events that were never written (no payload)
  uint64_t dropped = 0;              // events that did not fit the capacity
  uint64_t requested = 0;            // events the filters kept (recorded + dropped)

  size_t size() const { return headers.size(); }
};

}  // namespace ts
