#include "app/model/viewer/stage_series.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/viewer/pair_overview.h"

namespace ts {

namespace {

// Per event of s.events: m and l of its first query row, trace and reference (NaN where it cannot
// be compared), and its worst error / tolerance.
void fill_values(const RunView& run, const RunReference& reference, const AnalysisReport& report, size_t event,
                 StageSeries& s) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t i : s.events) {
    const EventResult& r = report.events[i];
    s.worst.push_back(r.nan ? nan : r.worst_ratio);
    try {
      const EventComparison c = compare_event(run, reference, i);
      if (i == event) s.normalised = c.compared_normalized;
      const auto first = [&](const std::vector<float>& v) { return v.empty() ? nan : v.front(); };
      s.m_trace.push_back(first(c.m_trace));
      s.m_reference.push_back(first(c.m_reference));
      s.l_trace.push_back(first(c.l_trace));
      s.l_reference.push_back(first(c.l_reference));
    } catch (const std::exception&) {  // not comparable (inputs missing): a gap in the curves
      s.m_trace.push_back(nan);
      s.m_reference.push_back(nan);
      s.l_trace.push_back(nan);
      s.l_reference.push_back(nan);
    }
  }
}

bool same_keys(const EventHeader& a, const EventHeader& b) {
  if (a.num_key_ranges != b.num_key_ranges) return false;
  for (int32_t k = 0; k < a.num_key_ranges && k < kMaxKeyRanges; ++k)
    if (a.keys[k].begin != b.keys[k].begin || a.keys[k].end != b.keys[k].end) return false;
  return true;
}

}  // namespace

std::optional<StageSeries> stage_series(const RunView& run, const RunReference& reference,
                                        const AnalysisReport& report, size_t event) {
  if (event >= run.num_events()) throw std::out_of_range("event " + std::to_string(event) + " is past the run's events");
  if (run.attention.seq_q > kFewQueryRows || report.events.size() != run.num_events()) return std::nullopt;
  const EventHeader& sel = run.headers[event];
  std::vector<std::pair<OrderKey, size_t>> found;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (!report.events[i].compared || h.stage != sel.stage || h.batch != sel.batch || h.head != sel.head ||
        h.q_begin != sel.q_begin || h.rows != sel.rows)
      continue;
    found.emplace_back(order_key(h, run.stages), i);
  }
  if (found.size() < 2 || found.size() > kMaxSeriesEvents) return std::nullopt;
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  StageSeries s;
  s.query = sel.q_begin;
  const int32_t first_step = run.headers[found.front().second].step;
  const int32_t first_split = run.headers[found.front().second].split;
  // The events' steps (splits) are first_step, first_step + 1, ... in order: x can be each one's.
  bool step_after_step = true, split_after_split = first_split >= 0;
  for (const auto& [key, i] : found) {
    if (i == event) s.selected = s.events.size();
    const int32_t k = static_cast<int32_t>(s.events.size());
    step_after_step = step_after_step && run.headers[i].step == first_step + k;
    split_after_split = split_after_split && run.headers[i].split == first_split + k;
    s.events.push_back(i);
  }
  // What x counts: a split each (a split's partial state, the reduce merging split after
  // split: x is the split), else the step (one block's events, one after another: x is each
  // one's number in its block), else the position in the kernel's order (a running state over
  // every split's kv tiles, or splits with gaps where events were not compared).
  if (split_after_split) {
    s.x_label = "split";
    s.first_x = first_split;
  } else if (step_after_step) {
    s.x_label = kEventOfItsBlock.name();
    s.first_x = first_step;
  } else {
    s.x_label = "event (kernel order)";
  }

  fill_values(run, reference, report, event, s);
  return s;
}

std::optional<StageSeries> group_series(const RunView& run, const RunReference& reference,
                                        const AnalysisReport& report, size_t event) {
  if (event >= run.num_events()) throw std::out_of_range("event " + std::to_string(event) + " is past the run's events");
  const AttentionSpec& a = run.attention;
  if (a.seq_q > kFewQueryRows || report.events.size() != run.num_events() || a.heads_kv < 1 ||
      a.heads_q % a.heads_kv != 0 || a.group_size() < 2)
    return std::nullopt;
  const EventHeader& sel = run.headers[event];
  const int64_t kv = a.kv_head_of(sel.head);
  std::vector<std::pair<int32_t, size_t>> found;  // (head, event)
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (!report.events[i].compared || h.stage != sel.stage || h.batch != sel.batch || h.q_begin != sel.q_begin ||
        h.rows != sel.rows || h.split != sel.split || h.step != sel.step || a.kv_head_of(h.head) != kv ||
        !same_keys(h, sel))
      continue;
    found.emplace_back(h.head, i);
  }
  std::sort(found.begin(), found.end());
  // One event per head, consecutive heads: anything else would put a point at the wrong x.
  if (found.size() < 2) return std::nullopt;
  for (size_t k = 1; k < found.size(); ++k)
    if (found[k].first != found[k - 1].first + 1) return std::nullopt;

  StageSeries s;
  s.query = sel.q_begin;
  s.x_label = "query head";
  s.first_x = found.front().first;
  std::vector<int32_t> heads;
  for (const auto& [head, i] : found) {
    if (i == event) s.selected = s.events.size();
    s.events.push_back(i);
    heads.push_back(head);
  }
  s.group = "kv head " + std::to_string(kv) + ": " + heads_text(std::move(heads));
  fill_values(run, reference, report, event, s);
  return s;
}

}  // namespace ts
