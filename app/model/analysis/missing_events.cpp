// Phase 5 of the analysis (analysis_phases.h): the planned events the kernel never wrote, in
// the kernel's own order, and the events the trace buffer dropped.
#include <string>

#include "app/model/analysis/analysis_phases.h"
#include "app/model/analysis/event_identity.h"

namespace ts {

void collect_missing_events(const RunView& run, AnalysisReport& rep) {
  const std::vector<EventHeader>& missing = run.missing;
  for (size_t i : kernel_order(missing, run.stages)) {
    const EventHeader& m = missing[i];
    if (m.stage < 0 || static_cast<size_t>(m.stage) >= run.num_stages()) continue;
    ++rep.stages[static_cast<size_t>(m.stage)].events_missing;
    rep.missing.push_back(m);
  }
  if (run.dropped_events > 0)
    rep.anomalies.push_back(std::to_string(run.dropped_events) +
                            " events were dropped because the trace buffer was full; they were not checked: capture "
                            "again with a larger trace capacity or narrower trace filters");
  for (StageReport& sr : rep.stages) {
    sr.events_expected = sr.events_compared + sr.events_missing;
    sr.traced = sr.events_expected > 0 || sr.events_not_compared > 0;
  }
}

}  // namespace ts
