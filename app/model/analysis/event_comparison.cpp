#include "app/model/analysis/event_comparison.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "instrumentation/trace/trace_file.h"

namespace ts {
namespace {

FloatGrid make_grid(int32_t rows, int32_t cols) {
  FloatGrid g;
  g.rows = rows;
  g.cols = cols;
  g.values.assign(static_cast<size_t>(rows) * static_cast<size_t>(cols), 0.0f);
  return g;
}

// trace - reference for display: NaN stays NaN, equal values (infinities too) are 0.
float display_diff(double got, double want) {
  if (std::isnan(got) || std::isnan(want)) return std::numeric_limits<float>::quiet_NaN();
  if (got == want) return 0.0f;
  return static_cast<float>(got - want);
}

bool over(double err, double bar) { return err > 0.0 && !(err <= bar); }

}  // namespace

std::vector<int32_t> EventComparison::failing_rows() const {
  std::vector<int32_t> out;
  for (int32_t r = 0; r < rows; ++r)
    if (!row_verdicts[static_cast<size_t>(r)].passes()) out.push_back(r);
  return out;
}

std::vector<int32_t> EventComparison::failing_columns() const {
  std::vector<int32_t> out;
  for (int32_t c = 0; c < head_dim; ++c)
    for (int32_t r = 0; r < rows; ++r)
      if (cell_fails[static_cast<size_t>(r) * head_dim + c]) {
        out.push_back(c);
        break;
      }
  return out;
}

EventComparison compare_event(const RunView& run, const RunReference& reference, size_t i) {
  if (i >= run.num_events())
    throw std::out_of_range("event " + std::to_string(i) + " is past the run's " +
                            std::to_string(run.num_events()) + " events");
  const RunEvent ev = run.event(i);
  const AttentionSpec& spec = reference.attention();
  std::string problem = event_header_problem(ev.header, run.num_stages(), spec, run.max_rows);
  if (problem.empty()) problem = event_problem(ev.header, spec);
  if (problem.empty() && ev.header.rows <= 0) problem = "it holds no rows";
  if (!problem.empty()) throw AnalysisError("event " + std::to_string(i) + " cannot be compared: " + problem);

  EventComparison cmp;
  cmp.event_index = i;
  cmp.header = ev.header;
  cmp.key = event_key(ev.header);
  cmp.stage = run.stage_of(i);
  cmp.keys = event_key_ranges(ev.header, cmp.stage, spec);
  cmp.rows = ev.header.rows;
  cmp.head_dim = run.head_dim;
  const RefState want = reference.expected(ev.header);
  cmp.trace_convention = ev.header.convention;
  cmp.reference_normalized = want.normalized;
  cmp.compared_normalized = compared_normalized(cmp.trace_convention, want.normalized);

  const double scale = spec.effective_scale();
  const TraceState got{cmp.trace_convention, scale, cmp.rows, cmp.head_dim, ev.m, ev.l, ev.o};
  cmp.row_errors.resize(static_cast<size_t>(cmp.rows));
  compare_state(got, want, cmp.row_errors);
  const StageBars& bars = reference.tolerance().for_stage(cmp.stage);
  const bool got_normalized = (cmp.trace_convention & kNormalized) != 0;
  const bool has_m = (cmp.trace_convention & kNoMax) == 0;

  const int32_t rows = cmp.rows, d = cmp.head_dim;
  for (FloatGrid* g : {&cmp.o_trace, &cmp.o_reference, &cmp.o_diff, &cmp.o_norm_trace, &cmp.o_norm_reference,
                       &cmp.o_norm_diff})
    *g = make_grid(rows, d);
  cmp.cell_fails.assign(static_cast<size_t>(rows) * static_cast<size_t>(d), 0);
  cmp.m_trace.resize(static_cast<size_t>(rows));
  cmp.m_reference.resize(cmp.m_trace.size());
  cmp.l_trace.resize(cmp.m_trace.size());
  cmp.l_reference.resize(cmp.m_trace.size());
  cmp.row_verdicts.resize(cmp.m_trace.size());

  for (int32_t r = 0; r < rows; ++r) {
    const size_t ri = static_cast<size_t>(r);
    const double got_m = has_m ? canonical_m(ev.m[ri], cmp.trace_convention, scale) : want.m[ri];
    const double got_l = got_normalized ? want.l[ri] : ev.l[ri];
    const RowValues g = row_values(got_m, got_l, got_normalized, cmp.compared_normalized);
    const RowValues w = row_values(want.m[ri], want.l[ri], want.normalized, cmp.compared_normalized);
    // A trace that did not record its m channel has no m to show.
    cmp.m_trace[ri] = has_m ? static_cast<float>(g.m) : std::numeric_limits<float>::quiet_NaN();
    cmp.m_reference[ri] = static_cast<float>(w.m);
    cmp.l_trace[ri] = static_cast<float>(g.l);
    cmp.l_reference[ri] = static_cast<float>(w.l);
    const RowError& e = cmp.row_errors[ri];
    const RowVerdict v = judge_row(e, bars);
    cmp.row_verdicts[ri] = v;
    if (!v.passes()) cmp.passes = false;
    cmp.worst_ratio = std::max(cmp.worst_ratio, v.ratio);
    const double raw_bar = bars.o_raw.bar(e.o_raw_ref, e.l_ref);
    const double norm_bar = bars.o_norm.bar(e.o_norm_ref, e.l_ref);
    for (int32_t c = 0; c < d; ++c) {
      const size_t at = ri * static_cast<size_t>(d) + static_cast<size_t>(c);
      const double go = ev.o[at], wo = want.o[at];
      const double gr = scaled_o(go, g, false), wr = scaled_o(wo, w, false);
      const double gn = scaled_o(go, g, true), wn = scaled_o(wo, w, true);
      cmp.o_trace.values[at] = static_cast<float>(gr);
      cmp.o_reference.values[at] = static_cast<float>(wr);
      cmp.o_diff.values[at] = display_diff(gr, wr);
      cmp.o_norm_trace.values[at] = static_cast<float>(gn);
      cmp.o_norm_reference.values[at] = static_cast<float>(wn);
      cmp.o_norm_diff.values[at] = display_diff(gn, wn);
      cmp.cell_fails[at] = std::isnan(go) || over(value_error(gr, wr), raw_bar) || over(value_error(gn, wn), norm_bar);
    }
  }
  return cmp;
}

}  // namespace ts
