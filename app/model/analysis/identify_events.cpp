// Phases 0 and 1 of the analysis (analysis_phases.h): the report's frame; which events can be
// compared, which repeat another, and the row blocks they form.
#include <map>
#include <string>

#include "app/model/analysis/analysis_error.h"
#include "app/model/analysis/analysis_phases.h"
#include "app/model/analysis/event_identity.h"
#include "instrumentation/trace/trace_file.h"

namespace ts {

AnalysisReport start_report(const RunView& run) {
  AnalysisReport rep;
  rep.label = run.label;
  rep.attention = run.attention;
  rep.stage_table = run.stages;
  rep.config = run.config;
  rep.tiling = run.tiling;
  rep.metadata = run.metadata;
  rep.dropped_events = run.dropped_events;
  for (size_t s = 0; s < run.num_stages(); ++s) {
    StageReport sr;
    sr.stage = static_cast<int32_t>(s);
    sr.info = run.stages[s];
    rep.stages.push_back(sr);
  }
  if (run.num_events() == 0 && run.missing.empty())
    throw AnalysisError("the run holds no events to compare (captured without tracing, or with filters that kept "
                        "nothing, and without its output); capture it with tracing on");
  rep.events.resize(run.num_events());
  return rep;
}

std::string comparison_problem(const RunView& run, size_t i) {
  const EventHeader& h = run.headers[i];
  // A run read from a file was checked by the reader; one made in memory (a capture, a
  // recorder, a test) is checked here, with the same rule.
  std::string problem = event_header_problem(h, run.num_stages(), run.attention, run.max_rows);
  if (problem.empty()) problem = event_problem(h, run.attention);
  if (problem.empty() && h.rows <= 0) problem = "it holds no rows";
  return problem;
}

ComparedEvents identify_events(const RunView& run, AnalysisReport& rep) {
  ComparedEvents ids;
  std::map<EventKey, size_t> present;
  std::map<RowBlock, size_t> block_index;
  size_t not_compared = 0, repeats = 0;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    const std::string problem = comparison_problem(run, i);
    if (!problem.empty()) {
      if (h.stage >= 0 && static_cast<size_t>(h.stage) < rep.stages.size()) {
        StageReport& sr = rep.stages[static_cast<size_t>(h.stage)];
        if (sr.events_not_compared++ == 0) {
          sr.first_not_compared_event = static_cast<int64_t>(i);
          sr.not_compared_reason = problem;
        }
      }
      if (not_compared++ < kNotesOfAKind)
        rep.anomalies.push_back("event " + std::to_string(i) + " (" + describe_event(h, run.stages, run.attention) +
                                "): " + problem + "; not compared");
      continue;
    }
    auto [it, fresh] = present.emplace(event_key(h), i);
    if (!fresh && repeats++ < kNotesOfAKind)
      rep.anomalies.push_back("event " + std::to_string(i) + " repeats event " + std::to_string(it->second) + " (" +
                              describe_event(h, run.stages, run.attention) + ")");
    const RowBlock rb = row_block(h);
    auto [bit, new_block] = block_index.emplace(rb, ids.blocks.size());
    if (new_block) {
      ids.blocks.push_back(rb);
      ids.by_block.emplace_back();
    }
    ids.by_block[bit->second].push_back(i);
    rep.events[i].compared = true;
  }
  if (not_compared > kNotesOfAKind)
    rep.anomalies.push_back("... and " + std::to_string(not_compared - kNotesOfAKind) +
                            " more events that cannot be compared (" + std::to_string(not_compared) + " in all)");
  if (repeats > kNotesOfAKind)
    rep.anomalies.push_back("... and " + std::to_string(repeats - kNotesOfAKind) + " more events that repeat an earlier one (" +
                            std::to_string(repeats) + " in all)");
  return ids;
}

}  // namespace ts
