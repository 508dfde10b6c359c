// Phase 6 of the analysis (analysis_phases.h): where the run first goes wrong. The first
// divergence is the earliest, in the kernel's own order (event_identity.h's order_key: a stage's
// pass, then its block, then the step in the block), of the events over tolerance and the
// planned events never written: an event the kernel never wrote is the divergence when it would
// have come before every failing one (later events often fail because of it). Decides the verdict.
// Events recorded but not compared that would have come before it are counted by stage: the
// kernel may have gone wrong there first, unseen.
#include <algorithm>
#include <map>
#include <optional>

#include "app/model/analysis/analysis_phases.h"
#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/event_identity.h"

namespace ts {

void find_first_divergence(const RunView& run, const RunReference& ref, AnalysisReport& rep) {
  std::optional<OrderKey> best, first_failing_key;
  int64_t best_event = -1, first_failing = -1, best_missing = -1;
  for (size_t i = 0; i < run.num_events(); ++i) {
    if (!rep.events[i].compared || rep.events[i].passes) continue;
    const OrderKey k = order_key(run.headers[i], run.stages);
    if (!first_failing_key || k < *first_failing_key) {
      first_failing_key = k;
      first_failing = static_cast<int64_t>(i);
    }
  }
  best = first_failing_key;
  best_event = first_failing;
  for (size_t m = 0; m < rep.missing.size(); ++m) {
    const OrderKey k = order_key(rep.missing[m], run.stages);
    if (!best || k < *best) {
      best = k;
      best_missing = static_cast<int64_t>(m);
      best_event = -1;
    }
  }
  Divergence& d = rep.first_divergence;
  d.first_failing_event = first_failing;
  if (best_missing >= 0) {
    d.found = true;
    d.missing = true;
    d.missing_index = best_missing;
    d.header = rep.missing[static_cast<size_t>(best_missing)];
    // Every row the event should have held went unchecked.
    for (int32_t r = 0; r < d.header.rows; ++r) d.query_rows.push_back(int64_t{d.header.q_begin} + r);
  } else if (best_event >= 0) {
    const EventResult& e = rep.events[static_cast<size_t>(best_event)];
    const EventComparison cmp = compare_event(run, ref, static_cast<size_t>(best_event));
    d.found = true;
    d.event_index = best_event;
    d.header = run.headers[static_cast<size_t>(best_event)];
    d.failed = e.failed;
    d.nan = e.nan;
    d.worst_ratio = e.worst_ratio;
    for (int32_t r : cmp.failing_rows()) d.query_rows.push_back(int64_t{d.header.q_begin} + r);
    d.columns = cmp.failing_columns();
  }
  if (d.found) {
    const OrderKey at = order_key(d.header, run.stages);
    std::map<int32_t, size_t> of_stage;  // stage -> index in not_compared_before
    std::vector<OrderKey> earliest;
    for (size_t i = 0; i < run.num_events(); ++i) {
      if (rep.events[i].compared) continue;
      const EventHeader& h = run.headers[i];
      const OrderKey k = order_key(h, run.stages);
      if (!(k < at)) continue;
      const int32_t stage = h.stage >= 0 && static_cast<size_t>(h.stage) < run.num_stages() ? h.stage : -1;
      auto [it, fresh] = of_stage.emplace(stage, d.not_compared_before.size());
      if (fresh) {
        d.not_compared_before.push_back({stage, 0, static_cast<int64_t>(i), ""});
        earliest.push_back(k);
      }
      UncomparedBefore& u = d.not_compared_before[it->second];
      ++u.events;
      if (k < earliest[it->second]) {
        earliest[it->second] = k;
        u.first_event = static_cast<int64_t>(i);
      }
    }
    std::vector<size_t> order(d.not_compared_before.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return earliest[a] < earliest[b]; });
    std::vector<UncomparedBefore> sorted;
    for (size_t j : order) {
      sorted.push_back(std::move(d.not_compared_before[j]));
      sorted.back().reason = comparison_problem(run, static_cast<size_t>(sorted.back().first_event));
    }
    d.not_compared_before = std::move(sorted);
  }
  rep.verdict = d.found ? Verdict::divergence : Verdict::clean;
}

}  // namespace ts
