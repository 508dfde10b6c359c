#include "app/model/analysis/symptoms.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/index_ranges.h"
#include "kernels/fault_trigger.h"

namespace ts {
namespace {

// How closely an error must match a model of it ("O is l times the reference", "the error is
// the previous tile's P.V") to be called by that name: float32 state, far tighter than any
// model that does not hold.
constexpr double kModelMatch = 1e-3;

std::string keys_text(const EventComparison& c) { return describe_keys(c.keys); }

std::string quantities_text(uint8_t failed) {
  std::vector<std::string> q;
  if (failed & kFailNaN) q.push_back("NaN");
  if (failed & kFailM) q.push_back("m");
  if (failed & kFailL) q.push_back("l");
  if (failed & (kFailONorm | kFailORaw)) q.push_back("O");
  std::string s;
  for (size_t i = 0; i < q.size(); ++i) s += (i ? (i + 1 == q.size() ? " and " : ", ") : "") + q[i];
  return s.empty() ? "nothing" : s;
}

std::string stage_summary(const StageReport& s) {
  std::string line = s.info.name + ": ";
  if (s.clean()) return line + "all " + std::to_string(s.events_compared) + " events match";
  line += std::to_string(s.events_failing) + " of " + std::to_string(s.events_compared) + " events wrong";
  if (s.events_missing) line += ", " + std::to_string(s.events_missing) + " never written";
  line += " (worst: O/l " + format_figure(s.o_norm.max_abs) + ", m " + format_figure(s.m.max_abs) + ", l rel " +
          format_figure(s.l.max_rel) + ")";
  if (s.non_finite.nan) line += ", " + std::to_string(s.non_finite.nan) + " NaN";
  return line;
}

// Stages of a kind that the run compared, and whether all of them are clean.
bool kind_clean_and_compared(const AnalysisReport& r, StageKind kind) {
  uint64_t compared = 0;
  for (const StageReport& st : r.stages)
    if (st.info.kind == kind && st.events_compared > 0) {
      if (!st.clean()) return false;
      compared += st.events_compared;
    }
  return compared > 0;
}

// The same-stage events of an event's sequence in its block: same stage, row block and split,
// whose keys start where this one's do; their key ends, sorted (the event's steps over the keys).
std::vector<int64_t> step_ends(const RunView& run, const EventHeader& h) {
  std::vector<int64_t> ends;
  if (h.num_key_ranges != 1) return ends;
  for (const EventHeader& x : run.headers)
    if (x.stage == h.stage && x.batch == h.batch && x.head == h.head && x.q_begin == h.q_begin &&
        x.rows == h.rows && x.split == h.split && x.num_key_ranges == 1 && x.keys[0].begin == h.keys[0].begin &&
        x.keys[0].end <= h.keys[0].end)
      ends.push_back(x.keys[0].end);
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  return ends;
}

// Rows of the event whose O is l times the reference O (double_count_l's shape), checked on the
// failing rows; false when l is ~1 (the model would say nothing).
bool o_is_l_times_reference(const EventComparison& c) {
  if (c.compared_normalized) return false;
  int checked = 0;
  for (int32_t r : c.failing_rows()) {
    const size_t ri = static_cast<size_t>(r);
    const double l = c.l_reference[ri];
    if (!(std::fabs(l - 1.0) > 1e-2) || !(std::fabs(c.l_trace[ri] - l) <= 1e-4 * l)) return false;
    double resid = 0, scale = 0;
    for (int32_t col = 0; col < c.head_dim; ++col) {
      const size_t at = ri * static_cast<size_t>(c.head_dim) + static_cast<size_t>(col);
      const double want = l * c.o_reference.values[at];
      resid = std::max(resid, std::fabs(c.o_trace.values[at] - want));
      scale = std::max(scale, std::fabs(want));
    }
    if (!(resid <= kModelMatch * scale)) return false;
    ++checked;
  }
  return checked > 0;
}

// Whether O - reference is what an accumulator that is never cleared adds (stale_accumulator's
// shape): each step's P.V (with the running max of its step) is added again at every later
// step. Rebuilt here from the reference's states of the event's steps over the keys (the key
// ends of its sequence's events): own state k covers keys [end_{k-1}, end_k),
//   pv_k = O_k exp(m_k - M_k)  (M_k: running max after step k),  S_k = S_{k-1} + pv_k,
//   err_k = exp(M_{k-1} - M_k) err_{k-1} + S_{k-1}.
bool error_is_stale_accumulation(const EventComparison& c, const RunView& run, const RunReference& ref) {
  const std::vector<int64_t> ends = step_ends(run, c.header);
  if (ends.size() < 2 || c.compared_normalized) return false;
  const auto block = ref.block(row_block(c.header));
  const size_t rows = static_cast<size_t>(c.rows), d = static_cast<size_t>(c.head_dim);
  std::vector<double> running(rows, -INFINITY), sum(rows * d, 0.0), err(rows * d, 0.0);
  int64_t begin = c.header.keys[0].begin;
  for (int64_t end : ends) {
    const KeyRange own_keys{static_cast<int32_t>(begin), static_cast<int32_t>(end)};
    const RefState own = block->state(std::span<const KeyRange>(&own_keys, 1));
    begin = end;
    for (size_t r = 0; r < rows; ++r) {
      const double m_new = std::max(running[r], own.m[r]);
      if (m_new == -INFINITY) continue;  // no key seen yet: nothing accumulated
      const double alpha = running[r] == -INFINITY ? 0.0 : std::exp(running[r] - m_new);
      const double w = own.m[r] == -INFINITY ? 0.0 : std::exp(own.m[r] - m_new);
      for (size_t col = 0; col < d; ++col) {
        err[r * d + col] = alpha * err[r * d + col] + sum[r * d + col];
        sum[r * d + col] += w * own.o[r * d + col];
      }
      running[r] = m_new;
    }
  }
  double resid = 0, scale = 0;
  for (size_t at = 0; at < rows * d; ++at) {
    resid = std::max(resid, std::fabs(static_cast<double>(c.o_diff.values[at]) - err[at]));
    scale = std::max(scale, std::fabs(err[at]));
  }
  return scale > 0 && resid <= kModelMatch * scale;
}

// Whether m equals the max of the event's last step alone (not the running max) on the rows
// where the two differ: each step uses its own max and the old state is never rescaled.
bool m_is_own_step_max(const EventComparison& c, const RunView& run, const RunReference& ref) {
  const std::vector<int64_t> ends = step_ends(run, c.header);
  if (ends.size() < 2 || c.compared_normalized) return false;
  const KeyRange last{static_cast<int32_t>(ends[ends.size() - 2]), static_cast<int32_t>(ends.back())};
  const RefState own = ref.block(row_block(c.header))->state(std::span<const KeyRange>(&last, 1));
  int differing = 0;
  for (int32_t r = 0; r < c.rows; ++r) {
    const size_t ri = static_cast<size_t>(r);
    const double own_m = own.m[ri], running = c.m_reference[ri];
    if (!std::isfinite(own_m) || std::fabs(own_m - running) <= 1e-4 * std::max(1.0, std::fabs(running))) continue;
    if (!(std::fabs(c.m_trace[ri] - own_m) <= 1e-4 * std::max(1.0, std::fabs(own_m)))) return false;
    ++differing;
  }
  return differing > 0;
}

// Per traced pair with a reduce stage: query 0 right, most later queries wrong.
bool first_query_right_later_wrong(const AnalysisReport& r, std::string& evidence) {
  bool any = false;
  for (const ErrorGrid& g : r.grids) {
    if (g.stage < 0 || r.stages[static_cast<size_t>(g.stage)].info.kind != StageKind::merge || g.grid.rows < 2 ||
        g.rows_per_cell != 1)
      continue;
    const std::vector<float> by_query = r.error_by_query(g.stage, g.batch, g.head);
    if (!(by_query[0] <= 1.0f)) return false;
    int64_t wrong = 0;
    float worst = 0;
    for (size_t q = 1; q < by_query.size(); ++q) {
      const bool bad = !(by_query[q] <= 1.0f);
      wrong += bad;
      if (bad) worst = std::isnan(by_query[q]) ? worst : std::max(worst, by_query[q]);
    }
    if (wrong * 2 < static_cast<int64_t>(by_query.size() - 1)) return false;
    if (!any)
      evidence = "error by query index (batch " + std::to_string(g.batch) + " head " + std::to_string(g.head) +
                 "): query 0 at " + format_figure(by_query[0]) + " x tolerance, " + std::to_string(wrong) + " of the " +
                 std::to_string(by_query.size() - 1) + " later queries wrong (up to " + format_figure(worst) + " x)";
    any = true;
  }
  return any;
}

Symptom missing_symptom(const AnalysisReport& r) {
  Symptom s;
  const Divergence& d = r.first_divergence;
  const StageInfo& first = r.stage_table[static_cast<size_t>(d.header.stage)];
  if (first.kind == StageKind::state && d.header.split >= 0) {
    std::set<int32_t> splits;
    bool all_empty = true;
    for (const EventHeader& m : r.missing)
      if (m.stage == d.header.stage) {
        splits.insert(m.split);
        bool empty = true;
        for (int32_t k = 0; k < m.num_key_ranges; ++k) empty = empty && m.keys[k].end <= m.keys[k].begin;
        all_empty = all_empty && empty;
      }
    const std::vector<int32_t> list(splits.begin(), splits.end());
    const bool one = list.size() == 1;
    // What the merges made of it.
    bool merge_wrong = false, merge_nan = false;
    for (const StageReport& st : r.stages)
      if (st.info.kind == StageKind::merge) {
        merge_wrong = merge_wrong || st.events_failing > 0;
        merge_nan = merge_nan || st.non_finite.nan > 0;
      }
    s.kind = "missing_partial";
    s.line = std::string(one ? "split " : "splits ") + format_ranges(std::span<const int32_t>(list)) +
             (one ? " has no " : " have no ") + first.name + " state";
    if (all_empty)
      s.line += " (" + std::string(one ? "it covers" : "they cover") + " no key: more splits than the keys fill)";
    if (merge_nan)
      s.line += "; the merge reads the unwritten state and NaN poisons the merged rows from split " +
                std::to_string(list.front()) + " on: an empty split must write m = -inf, l = 0, O = 0";
    else if (merge_wrong)
      s.line += "; the merge reads the unwritten state and is wrong from split " + std::to_string(list.front()) + " on";
    else
      s.line += "; the kernel never wrote " + std::string(one ? "its" : "their") + " state";
    return s;
  }
  s.kind = "missing_events";
  s.line = std::to_string(r.missing.size()) + " events were never written; the first: " +
           describe_event(d.header, r.stage_table, r.attention);
  return s;
}

}  // namespace

Symptom diagnose(const AnalysisReport& r, const RunView& run, const RunReference& ref) {
  Symptom s;
  const Divergence& d = r.first_divergence;
  if (!d.found) {
    uint64_t events = 0;
    for (const StageReport& st : r.stages) events += st.events_compared;
    s.kind = "clean";
    s.line = "no divergence: all " + std::to_string(events) + " events match the float64 reference within tolerance";
    if (r.dropped_events > 0)  // a full trace buffer: what was dropped was never checked
      s.line = "no divergence in the " + std::to_string(events) + " recorded events, but the trace is incomplete: " +
               std::to_string(r.dropped_events) +
               " events were dropped (the trace buffer was full) and were not checked; capture again with a larger "
               "--capacity or narrower filters";
    if (r.config && r.tiling && r.config->fault != Fault::none) {
      // A faulty kernel that ran clean: say why, so that "clean" does not read as "no bug".
      const std::string why = why_fault_cannot_show(*r.config, *r.tiling);
      s.line += "; the kernel was built with fault " + std::string(to_string(r.config->fault)) + ", but " +
                (why.empty() ? "its error stayed within the tolerance here" : why);
    }
    for (const std::string& a : r.anomalies) s.details.push_back(a);
    return s;
  }
  if (d.missing) {
    s = missing_symptom(r);
  } else {
    const EventComparison c = compare_event(run, ref, static_cast<size_t>(d.event_index));
    const EventResult& e = r.events[static_cast<size_t>(d.event_index)];
    const StageInfo& st = r.stage_table[static_cast<size_t>(d.header.stage)];
    const bool o_only = (e.failed & (kFailM | kFailL | kFailNaN)) == 0;
    const std::vector<int64_t>& rows = d.query_rows;

    if (e.nan > 0 && e.nan == e.nan_in_no_key_rows) {
      s.kind = "nan_fully_masked";
      s.line = "NaN from fully masked tiles: queries " + format_ranges(std::span<const int64_t>(rows)) +
               " see no key in " + keys_text(c) +
               " (masked), and the kernel writes NaN where it should keep m = -inf, l = 0, O = 0 "
               "(exp(-inf - -inf) is NaN): guard rows whose running max is still -inf";
    } else if (st.kind == StageKind::merge && kind_clean_and_compared(r, StageKind::state)) {
      std::string evidence;
      if (first_query_right_later_wrong(r, evidence)) {
        s.kind = "query_layout";
        s.line = "every partial matches; the reduce is right for query 0 and wrong from query 1 on: error grows with "
                 "query index from query 0, as when the reducer reads the partial buffers with another layout "
                 "(query stride) than the partial pass wrote them";
        s.details.push_back(evidence);
      } else if (o_only && o_is_l_times_reference(c)) {
        s.kind = "reduce_scaled_by_l";
        s.line = "every partial matches; the reduce is wrong: its m and l are right but O is l times the reference "
                 "(at split " + std::to_string(d.header.split) +
                 "): the merge weights each split's O by its sum l again; weight it by exp(m_s - m) only";
      } else {
        s.kind = "reduce_only";
        s.line = "every partial matches; the reduce is wrong (" + quantities_text(e.failed) + " from split " +
                 std::to_string(d.header.split) + ")";
      }
    } else if (st.kind == StageKind::final &&
               std::all_of(r.stages.begin(), r.stages.end(), [](const StageReport& x) {
                 return x.info.kind == StageKind::final || x.events_compared == 0 || x.clean();
               }) &&
               std::any_of(r.stages.begin(), r.stages.end(), [](const StageReport& x) {
                 return x.info.kind != StageKind::final && x.events_compared > 0;
               })) {
      s.kind = "final_only";
      s.line = "every intermediate state matches; the final output is wrong (" + quantities_text(e.failed) +
               "): the normalisation O/l, the LSE or the write of the output";
    } else if (st.kind == StageKind::state && e.nan == 0 && e.inf == 0) {
      // The step pattern of the stage: do the first steps of each sequence pass?
      uint64_t first_steps = 0, first_fail = 0, later_fail = 0;
      uint8_t later_failed = 0;
      for (size_t i = 0; i < r.events.size(); ++i) {
        const EventResult& x = r.events[i];
        const EventHeader& h = run.headers[i];
        if (!x.compared || h.stage != d.header.stage) continue;
        if (step_ends(run, h).size() == 1) {
          ++first_steps;
          first_fail += !x.passes;
        } else {
          later_fail += !x.passes;
          later_failed |= x.failed;
        }
      }
      const bool first_step_right =
          first_steps > 0 && first_fail == 0 && step_ends(run, d.header).size() > 1 && later_fail > 0;
      if (o_only && error_is_stale_accumulation(c, run, ref)) {
        s.kind = "stale_state";
        s.line = "state from an earlier tile leaks: m and l are right at every step, but O = the reference + the "
                 "P.V of earlier kv tiles added again once a second tile is accumulated (" + keys_text(c) +
                 "): the P.V accumulator is not reset between kv tiles";
      } else if (first_step_right && (later_failed & (kFailM | kFailL))) {
        s.kind = "first_tile_only";
        s.line = "right after the first kv tile, wrong after: m and l are not carried across kv tiles (the running "
                 "state is not rescaled by exp(m_old - m_new): online softmax)";
        if (m_is_own_step_max(c, run, ref))
          s.details.push_back("at " + keys_text(c) + ", m is the max of the last step's keys alone, not the running max");
      } else if (first_step_right && o_only) {
        s.kind = "multi_tile_o";
        s.line = "m and l are right; O is right with one kv tile and wrong once a second is used: values of another "
                 "tile get into O (an accumulator not reset, or a shared-memory tile overwritten before every "
                 "thread has read it: if two --perturb-seed captures differ (diff A --against B), it is a race)";
      } else if (o_only) {
        s.kind = "o_only";
        s.line = "m and l are right but O is wrong from " + keys_text(c) +
                 " on: P.V reads V values that are not the tile's (shared memory read before it is loaded, or "
                 "overwritten by the next tile; if two --perturb-seed captures differ, it is a race)";
      }
    }
    if (s.kind.empty() && (e.nan > 0 || e.inf > 0)) {
      s.kind = e.nan > 0 ? "nan" : "inf";
      s.line = std::string(e.nan > 0 ? "NaN" : "Inf") + " first appears at " +
               describe_event(d.header, r.stage_table, r.attention) +
               ", in queries " + format_ranges(std::span<const int64_t>(rows)) + ", where the reference is finite";
    }
    if (s.kind.empty()) {
      s.kind = "wrong_values";
      s.line = "the first wrong values are at " + describe_event(d.header, r.stage_table, r.attention) + ": " +
               quantities_text(e.failed) + " in queries " + format_ranges(std::span<const int64_t>(rows));
    }
  }
  s.details.insert(s.details.begin(), "first divergence: " + describe_event(d.header, r.stage_table, r.attention) +
                                          (d.missing ? " was never written" : ""));
  for (const StageReport& st : r.stages)
    if (st.traced) s.details.push_back(stage_summary(st));
  for (const std::string& a : r.anomalies) s.details.push_back(a);
  return s;
}

}  // namespace ts
