// Phase 3 of the analysis (analysis_phases.h): each compared event's verdict under the
// tolerance, and each stage's figures (events and rows compared and failing, the worst error of
// each quantity, non-finite values, the state convention).
#include <algorithm>
#include <cmath>
#include <set>

#include "app/model/analysis/analysis_phases.h"

namespace ts {
namespace {

void add_quantity(QuantityStats& q, float err, float ref, const QuantityBar& bar, float l_ref) {
  const float ratio = bar_ratio(err, bar.bar(ref, l_ref));
  q.max_abs = std::max<double>(q.max_abs, err);
  const double rel = err == 0.0f ? 0.0 : (ref > 0.0f ? static_cast<double>(err) / ref : INFINITY);
  q.max_rel = std::max(q.max_rel, rel);
  q.max_ratio = std::max<double>(q.max_ratio, ratio);
  if (ratio > 1.0f) ++q.failing_rows;
}

}  // namespace

void judge_events(const RunView& run, std::span<const RowError> row_errors, AnalysisReport& rep) {
  const size_t rows_cap = static_cast<size_t>(run.max_rows);
  std::vector<std::set<int32_t>> conventions(run.num_stages());
  for (size_t i = 0; i < run.num_events(); ++i) {
    EventResult& res = rep.events[i];
    if (!res.compared) continue;
    const EventHeader& h = run.headers[i];
    StageReport& sr = rep.stages[static_cast<size_t>(h.stage)];
    const StageBars& bars = rep.tolerance.for_stage(run.stage_of(i));
    conventions[static_cast<size_t>(h.stage)].insert(h.convention);
    ++sr.events_compared;
    for (int32_t r = 0; r < h.rows; ++r) {
      const RowError& e = row_errors[i * rows_cap + static_cast<size_t>(r)];
      const RowVerdict v = judge_row(e, bars);
      ++sr.rows_compared;
      add_quantity(sr.m, e.m_err, e.m_ref, bars.m, e.l_ref);
      add_quantity(sr.l, e.l_err, e.l_ref, bars.l, e.l_ref);
      add_quantity(sr.o_norm, e.o_norm_err, e.o_norm_ref, bars.o_norm, e.l_ref);
      add_quantity(sr.o_raw, e.o_raw_err, e.o_raw_ref, bars.o_raw, e.l_ref);
      sr.non_finite.nan += e.nan;
      sr.non_finite.pos_inf += e.pos_inf;
      sr.non_finite.neg_inf += e.neg_inf;
      res.nan += e.nan;
      res.inf += static_cast<uint32_t>(e.pos_inf) + e.neg_inf;
      if (e.no_key) {
        ++res.no_key_rows;
        res.nan_in_no_key_rows += e.nan;
      }
      res.worst_ratio = std::max(res.worst_ratio, v.ratio);
      res.failed |= v.failed;
      if (!v.passes()) {
        ++sr.rows_failing;
        ++res.failing_rows;
        if (res.first_failing_row < 0) res.first_failing_row = r;
      }
    }
    res.passes = res.failed == 0;
    if (!res.passes) {
      ++sr.events_failing;
      if (sr.first_failing_event < 0) sr.first_failing_event = static_cast<int64_t>(i);
    }
  }
  for (size_t s = 0; s < run.num_stages(); ++s) {
    const auto& c = conventions[s];
    if (c.size() == 1) rep.stages[s].convention = convention_name(*c.begin());
    else if (c.size() > 1) rep.stages[s].convention = "mixed";
  }
}

}  // namespace ts
