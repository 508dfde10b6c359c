// Curves where query rows are few (decode). The detail view's m, l and error curves run over the
// selected event's query rows; with one row they are a single point. Then they run instead over
// the event's siblings: the events of its stage, (batch, head) and query rows in the kernel's
// order — one per split for a split's partial state, one per merge step for a reduce, one per kv
// tile for a running state — so the state's path over the keys is what the curves show. Where
// query heads share a kv head (GQA), the curves can run across the event's group instead: the
// same event (stage, query rows, split, step, keys) of each query head on its kv head, so heads
// that read the same keys and values are side by side. No GL.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/run_view.h"

namespace ts {

struct StageSeries {
  std::vector<size_t> events;  // in the kernel's order
  size_t selected = 0;         // the selected event's index in `events`
  std::string x_label;         // what x counts: "split" (one event per split), "event of its
                               // block" (one per step of one block: kEventOfItsBlock), "query
                               // head" (group_series), else "event (kernel order)"
  int64_t first_x = 0;         // x of events[0] (the group's first head, the first split or
                               // step; 0 for the kernel's order)
  std::string group;           // group_series: the group's label ("kv head 0: heads 0-3")
  int64_t query = 0;           // the query row the m and l curves follow (the events' first)
  bool normalised = false;     // m is the LSE (the compared convention of the selected event)
  // Per event: m (LSE when normalised) and l of `query`, trace and reference; NaN where an event
  // could not be compared (its inputs missing); its worst error / tolerance (NaN for NaN).
  std::vector<float> m_trace, m_reference, l_trace, l_reference, worst;
};

// Most events a series is built for when an event is selected (each is compared against its
// reference on the UI thread; a decode pair's running state has one per kv tile).
inline constexpr size_t kMaxSeriesEvents = 1024;

// The series of `event`, when the run's query rows are few (pair_overview.h: kFewQueryRows) and
// the event has siblings (more than one event in the series) and not over kMaxSeriesEvents;
// nothing otherwise (the curves over query rows stay). Throws std::out_of_range for an index past
// the events.
std::optional<StageSeries> stage_series(const RunView& run, const RunReference& reference,
                                        const AnalysisReport& report, size_t event);

// The series across the GQA group of `event`, when query rows are few and more than one query
// head shares its kv head: the compared events of its stage, batch, query rows, split, step and
// key ranges, one per query head of the group, by head; x is the query head. Nothing when the
// group's heads in the trace are not consecutive (x would mislabel them) or fewer than two.
// Throws std::out_of_range for an index past the events.
std::optional<StageSeries> group_series(const RunView& run, const RunReference& reference,
                                        const AnalysisReport& report, size_t event);

}  // namespace ts
