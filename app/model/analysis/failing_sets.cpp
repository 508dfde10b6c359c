// Failing sets per stage, non-finite rows, and their text (failing_sets.h).
#include "app/model/analysis/failing_sets.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/index_ranges.h"
#include "base/list_text.h"

namespace ts {
namespace {

struct SetBuilder {
  std::set<int64_t> failing, compared;
  void into(IndexSet& out) const {
    out.failing.assign(failing.begin(), failing.end());
    out.compared.assign(compared.begin(), compared.end());
  }
};

struct StageSets {
  SetBuilder batches, heads, rows, splits, steps, key_ends, columns;
  std::vector<size_t> failing_events;
};

std::string ranges_text(const std::vector<int64_t>& v) { return format_ranges(std::span<const int64_t>(v), 6); }

// A row's non-finite values, read from the trace (the row errors count them; this says where).
NonFiniteRow non_finite_row(const RunView& run, const RunReference& reference, size_t event, int32_t r,
                            const RowError& e) {
  NonFiniteRow n;
  n.event_index = static_cast<int64_t>(event);
  const RunEvent ev = run.event(event);
  n.header = ev.header;
  n.query = int64_t{ev.header.q_begin} + r;
  n.nan = e.nan;
  n.pos_inf = e.pos_inf;
  n.neg_inf = e.neg_inf;
  const size_t ri = static_cast<size_t>(r), d = static_cast<size_t>(run.head_dim);
  const bool normalized = (ev.header.convention & kNormalized) != 0;
  const float m = ev.m[ri], l = ev.l[ri];
  bool o_zero = true;
  for (size_t c = 0; c < d; ++c) {
    const float o = ev.o[ri * d + c];
    n.o_columns += !std::isfinite(o);
    o_zero = o_zero && o == 0.0f;
  }
  n.holds_no_key_state = m == -INFINITY && (normalized || l == 0.0f) && o_zero;
  const StageInfo& stage = run.stage_of(event);
  const std::vector<KeyRange> keys = event_key_ranges(ev.header, stage, reference.attention());
  const AttentionSpec& spec = reference.attention();
  const AttentionSpec::KeySpan span = spec.visible_keys(ev.header.batch, n.query);
  int64_t first = -1, last = -1;
  for (const KeyRange& k : keys) {
    const int64_t b = std::max<int64_t>(k.begin, span.begin), en = std::min<int64_t>(k.end, span.end);
    if (b >= en) continue;
    n.reference_keys += en - b;
    first = first < 0 ? b : std::min(first, b);
    last = std::max(last, en);
  }
  if (first >= 0) n.reference_span = {static_cast<int32_t>(first), static_cast<int32_t>(last)};
  // m = -inf is right for a row that sees no key; l is never infinite.
  n.m_non_finite = (ev.header.convention & kNoMax) == 0 && (std::isnan(m) || (std::isinf(m) && n.reference_keys > 0));
  n.l_non_finite = !normalized && !std::isfinite(l);
  return n;
}

}  // namespace

std::string quantities_text(uint8_t failed) {
  std::vector<std::string> q;
  if (failed & kFailNaN) q.push_back("NaN");
  if (failed & kFailM) q.push_back("m");
  if (failed & kFailL) q.push_back("l");
  if (failed & (kFailONorm | kFailORaw)) q.push_back("O");
  return q.empty() ? "nothing" : spoken_list(q, "and");
}

std::string index_set_text(const IndexSet& set, const IndexNames& names) {
  const std::string many(names.many), many_after(names.many_after);
  if (set.compared.size() == 1) return names.numbered(set.compared.front());
  if (set.all()) return "all " + many + many_after + " (" + ranges_text(set.compared) + ")";
  if (set.failing.empty()) return "no " + std::string(names.one) + many_after;
  const std::string of = " (of " + ranges_text(set.compared) + ")";
  if (set.failing.size() == 1) return names.numbered(set.failing.front()) + " only" + of;
  return many + " " + ranges_text(set.failing) + many_after + of;
}

std::string failing_sets_text(const FailingSets& s) {
  std::vector<std::string> parts;
  parts.push_back(index_set_text(s.batches, kBatchNames));
  parts.push_back(index_set_text(s.heads, kHeadNames));
  parts.push_back(index_set_text(s.query_rows, kQueryNames));
  if (!(s.splits.compared.size() == 1 && s.splits.compared.front() < 0))
    parts.push_back(index_set_text(s.splits, kSplitNames));
  if (s.steps.compared.size() > 1) parts.push_back(index_set_text(s.steps, kEventOfItsBlock));
  if (s.key_ends.compared.size() > 1)
    parts.push_back("events ending at " + index_set_text(s.key_ends, kKeyNames));
  if (s.column_events_checked > 0) {
    if (s.columns.all()) parts.push_back("all " + std::to_string(s.columns.compared.size()) + " head-dim columns");
    else if (!s.columns.empty()) parts.push_back(index_set_text(s.columns, kColumnNames));
  }
  std::string line;
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : "") + parts[i];
  return line + "; " + quantities_text(s.quantities) + " wrong";
}

void measure_failing_sets(const RunView& run, const RunReference& reference, std::span<const RowError> row_errors,
                          AnalysisReport& rep) {
  const size_t rows_cap = static_cast<size_t>(run.max_rows);
  std::vector<StageSets> sets(run.num_stages());
  std::vector<uint8_t> quantities(run.num_stages(), 0);
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventResult& res = rep.events[i];
    if (!res.compared) continue;
    const EventHeader& h = run.headers[i];
    const StageInfo& stage = run.stage_of(i);
    StageSets& s = sets[static_cast<size_t>(h.stage)];
    const int64_t key_end = event_key_end(h, stage, run.attention);
    s.batches.compared.insert(h.batch);
    s.heads.compared.insert(h.head);
    s.splits.compared.insert(h.split);
    s.steps.compared.insert(h.step);
    s.key_ends.compared.insert(key_end);
    for (int32_t r = 0; r < h.rows; ++r) s.rows.compared.insert(int64_t{h.q_begin} + r);
    if (res.passes) continue;
    s.failing_events.push_back(i);
    s.batches.failing.insert(h.batch);
    s.heads.failing.insert(h.head);
    s.splits.failing.insert(h.split);
    s.steps.failing.insert(h.step);
    s.key_ends.failing.insert(key_end);
    const StageBars& bars = rep.tolerance.for_stage(stage);
    for (int32_t r = 0; r < h.rows; ++r) {
      const RowError& e = row_errors[i * rows_cap + static_cast<size_t>(r)];
      const RowVerdict v = judge_row(e, bars);
      if (v.passes()) continue;
      s.rows.failing.insert(int64_t{h.q_begin} + r);
      quantities[static_cast<size_t>(h.stage)] |= v.failed;
      if ((e.nan || e.pos_inf || e.neg_inf) && rep.non_finite_rows.size() < kMaxNonFiniteRows)
        rep.non_finite_rows.push_back(non_finite_row(run, reference, i, r, e));
    }
  }
  for (size_t st = 0; st < sets.size(); ++st) {
    StageSets& s = sets[st];
    FailingSets& f = rep.stages[st].failing;
    f.events_failing = s.failing_events.size();
    f.events_compared = rep.stages[st].events_compared;
    f.quantities = quantities[st];
    for (int64_t c = 0; c < run.head_dim; ++c) s.columns.compared.insert(c);
    // Columns from the failing events' cells: all of them, or those of evenly spaced row blocks.
    bool sampled = false;
    const SampleBudget budget{static_cast<uint64_t>(std::max<int64_t>(1, kColumnCellBudget / std::max(1, run.head_dim))),
                              static_cast<uint64_t>(std::max<int64_t>(1, kColumnReferenceBudget / std::max<int64_t>(1, run.attention.seq_kv * run.head_dim)))};
    for (size_t i : sample_row_blocks(s.failing_events, run.headers, budget, sampled)) {
      const EventComparison cmp = compare_event(run, reference, i);
      for (int32_t c : cmp.failing_columns()) s.columns.failing.insert(c);
      ++f.column_events_checked;
    }
    s.batches.into(f.batches);
    s.heads.into(f.heads);
    s.rows.into(f.query_rows);
    s.splits.into(f.splits);
    s.steps.into(f.steps);
    s.key_ends.into(f.key_ends);
    s.columns.into(f.columns);
  }
}

}  // namespace ts
