// The worst cell of each stage and of the run (worst_cell.h).
#include "app/model/analysis/worst_cell.h"

#include <cmath>
#include <limits>
#include <optional>

#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/index_ranges.h"

namespace ts {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Candidate {
  std::string quantity;
  int32_t column = -1;
  double trace = 0, reference = 0;
  const QuantityBar* bar = nullptr;
  double row_scale = 0, l_ref = 0;
  std::optional<double> trace_l;  // see WorstCell::trace_l
};

double cell_error(double got, double want) { return value_error(got, want); }

// Larger ratio wins; a NaN (infinite error) beats any finite one.
void consider(WorstCell& best, bool& have, const Candidate& c, int64_t query) {
  const double err = cell_error(c.trace, c.reference);
  const double allowed = c.bar->bar(c.row_scale, c.l_ref);
  const double ratio = bar_ratio(err, allowed);
  if (have && !(ratio > best.ratio)) return;
  have = true;
  best.query = query;
  best.quantity = c.quantity;
  best.column = c.column;
  best.trace = c.trace;
  best.reference = c.reference;
  best.abs_error = err;
  best.rel_error = err == 0.0 ? 0.0 : (c.reference != 0.0 && std::isfinite(c.reference) ? err / std::fabs(c.reference) : kInf);
  best.allowed = allowed;
  best.atol = c.bar->atol_per_l ? c.bar->atol * c.l_ref : c.bar->atol;
  best.rtol = c.bar->rtol;
  best.row_scale = c.row_scale;
  best.ratio = ratio;
  best.trace_l = c.trace_l;
}

WorstCell worst_cell_of(const RunView& run, const RunReference& reference, size_t event, const Tolerance& tolerance) {
  const EventComparison cmp = compare_event(run, reference, event);
  const StageBars& bars = tolerance.for_stage(cmp.stage);
  WorstCell best;
  best.event_index = static_cast<int64_t>(event);
  best.header = cmp.header;
  bool have = false;
  const bool has_m = (cmp.trace_convention & kNoMax) == 0;
  const bool l_read = (cmp.trace_convention & kNormalized) == 0;
  for (int32_t r = 0; r < cmp.rows; ++r) {
    const size_t ri = static_cast<size_t>(r);
    const RowError& e = cmp.row_errors[ri];
    const int64_t query = int64_t{cmp.header.q_begin} + r;
    if (has_m)
      consider(best, have,
               {cmp.compared_normalized ? "lse" : "m", -1, cmp.m_trace[ri], cmp.m_reference[ri], &bars.m, e.m_ref,
                e.l_ref, std::nullopt},
               query);
    if (l_read && !cmp.compared_normalized)
      consider(best, have, {"l", -1, cmp.l_trace[ri], cmp.l_reference[ri], &bars.l, e.l_ref, e.l_ref, std::nullopt}, query);
    for (int32_t c = 0; c < cmp.head_dim; ++c) {
      const size_t at = ri * static_cast<size_t>(cmp.head_dim) + static_cast<size_t>(c);
      // Normalised, raw O is O/l: one quantity. Unnormalised, both are compared.
      if (!cmp.compared_normalized)
        consider(best, have,
                 {"O", c, cmp.o_trace.values[at], cmp.o_reference.values[at], &bars.o_raw, e.o_raw_ref, e.l_ref, std::nullopt},
                 query);
      consider(best, have,
               {cmp.compared_normalized ? "O" : "O/l", c, cmp.o_norm_trace.values[at], cmp.o_norm_reference.values[at],
                &bars.o_norm, e.o_norm_ref, e.l_ref,
                cmp.compared_normalized || !l_read ? std::nullopt : std::optional<double>(cmp.l_trace[ri])},
               query);
    }
  }
  return best;
}

}  // namespace

void find_worst_cells(const RunView& run, const RunReference& reference, AnalysisReport& rep) {
  for (StageReport& sr : rep.stages) {
    if (sr.events_failing == 0) continue;
    int64_t worst = -1;
    float worst_ratio = -1;
    for (size_t i = 0; i < run.num_events(); ++i) {
      const EventResult& e = rep.events[i];
      if (!e.compared || e.passes || run.headers[i].stage != sr.stage) continue;
      if (e.worst_ratio > worst_ratio) {
        worst_ratio = e.worst_ratio;
        worst = static_cast<int64_t>(i);
      }
    }
    if (worst < 0) continue;
    sr.worst_cell = worst_cell_of(run, reference, static_cast<size_t>(worst), rep.tolerance);
    if (!rep.worst_cell || sr.worst_cell->ratio > rep.worst_cell->ratio) rep.worst_cell = sr.worst_cell;
  }
}

std::string describe_worst_cell(const WorstCell& w, const AnalysisReport& r) {
  const EventHeader& h = w.header;
  std::string s = w.quantity + " at batch " + std::to_string(h.batch) + " head " + std::to_string(h.head) + " query " +
                  std::to_string(w.query);
  if (w.column >= 0) s += " column " + std::to_string(w.column);
  s += " (" + describe_event(h, r.stage_table, r.attention) + "): trace " + format_figure(w.trace) + ", reference " +
       format_figure(w.reference) + ", |error| " + format_figure(w.abs_error) + " (relative " +
       format_figure(w.rel_error) + "), allowed " + format_figure(w.allowed) + " = " + format_figure(w.atol) + " + " +
       format_figure(w.rtol) + " x " + format_figure(w.row_scale) + ": " + format_figure(w.ratio) + " x the tolerance";
  // An O/l that is not finite while its O is: say where it came from (the stage's non-finite
  // counts are of the values the trace holds, which are finite).
  if (w.trace_l && !std::isfinite(w.trace) && (*w.trace_l == 0.0 || !std::isfinite(*w.trace_l)))
    s += "; the trace's l of that row is " + format_figure(*w.trace_l);
  return s;
}

}  // namespace ts
