// Curves where query rows are few (decode). The detail view's m, l and error curves run over the
// selected event's query rows; with one row they are a single point. Then they run instead over
// the event's siblings: the events of its stage, (batch, head) and query rows in the kernel's
// order — one per split for a split's partial state, one per merge step for a reduce, one per kv
// tile for a running state — so the state's path over the keys is what the curves show. No GL.
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
  std::string x_label;         // what x counts: "split" (one event per split), "step" (one per
                               // step), else "event (kernel order)"
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

}  // namespace ts
