// The timeline: where and when each recorded event ran. Every event records the SM (GPU) or
// SIMT worker (CPU) that wrote it (`events.where`) and a clock reading taken as it was written
// (`events.time_ns`: %globaltimer on a GPU, the host's steady clock on the CPU backend). The
// viewer's timeline panel draws one lane per SM / worker and one box per event; this is the
// arithmetic behind it, with no GL, so that it is tested on its own.
//
// A block records no start time of its own: an event's box runs from the previous event of the
// same block (same pass, same block index) to the event itself, i.e. the work of that step. A
// block's first event has nothing before it and is a box of no width (a tick): the time from
// the block's launch to its first event is not in the trace.
//
// Events without a clock reading (time 0: the final output appended from the output tensor,
// traces that did not record one) are left out and counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/model/run_view.h"

namespace ts {

struct TimelineBox {
  size_t event = 0;          // index into the run's events
  int32_t lane = 0;          // index into Timeline::lanes
  int64_t start_ns = 0;      // from Timeline::origin_ns: the block's previous event (or the event)
  int64_t end_ns = 0;        // the event's own time
};

// Durations of a group of events (a stage, or one split of a stage): from its first event to its
// last, and the sum of its boxes (work done between consecutive events of a block).
struct TimelineSpan {
  int32_t stage = 0;
  int32_t split = -1;        // -1: the whole stage
  int64_t first_ns = 0, last_ns = 0;  // from origin_ns
  int64_t busy_ns = 0;       // sum of the boxes' widths
  size_t events = 0;
  int64_t span_ns() const { return last_ns - first_ns; }
};

struct Timeline {
  std::string clock;         // what the times are: "GPU %globaltimer" or "CPU steady clock"
  bool gpu = false;
  int64_t origin_ns = 0;     // the earliest event's time (absolute, as recorded)
  int64_t end_ns = 0;        // the latest, from origin_ns
  std::vector<int32_t> lanes;          // the `where` of each lane, ascending (-1, unknown, first)
  std::vector<TimelineBox> boxes;      // by lane, then by time
  std::vector<TimelineSpan> stages;    // per stage with timed events, in stage order
  std::vector<TimelineSpan> splits;    // per (stage, split) for stages whose events have splits
  size_t untimed_events = 0;           // left out: no clock reading, or one far from the run's others
  bool empty() const { return boxes.empty(); }
};

// Idle time: the spans in which no box is open (between passes on a GPU, the launch gap can be a
// thousand times the passes' own length). A time axis with them drawn narrow: each gap longer
// than `min_fraction` of the timeline's length is cut to `shown_fraction` of the length of what
// remains, so that the passes fill the picture and the gaps still show (with their length
// written on them).
struct TimelineAxis {
  struct Cut {
    int64_t begin_ns = 0, end_ns = 0;  // the idle span, from origin_ns
    double shown = 0;                  // its width on the axis, in axis units
  };
  std::vector<Cut> cuts;               // ascending, disjoint
  double length = 0;                   // the axis's length in axis units (= end_ns with no cuts)

  double to_axis(double ns) const;     // monotonic; identity with no cuts
  double to_ns(double axis) const;     // its inverse
};
TimelineAxis timeline_axis(const Timeline& t, bool collapse_gaps, double min_fraction = 0.05,
                           double shown_fraction = 0.03);

// Throws nothing: a run without times gives an empty timeline (with untimed_events counted).
Timeline build_timeline(const RunView& run);

// "12.3 us", "4.56 ms", "789 ns".
std::string format_duration_ns(int64_t ns);

// The split of `stage` whose last event comes last (the straggler); -1 when the stage has no
// split spans.
int32_t straggler_split(const Timeline& t, int32_t stage);

}  // namespace ts
