#include "app/model/viewer/timeline.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "instrumentation/trace/trace_file.h"

namespace ts {

std::string format_duration_ns(int64_t ns) {
  char text[32];
  const double v = static_cast<double>(ns);
  if (ns < 0) std::snprintf(text, sizeof text, "-%s", format_duration_ns(-ns).c_str());
  else if (ns < 1000) std::snprintf(text, sizeof text, "%lld ns", static_cast<long long>(ns));
  else if (ns < 1000000) std::snprintf(text, sizeof text, "%.3g us", v / 1e3);
  else if (ns < 1000000000) std::snprintf(text, sizeof text, "%.3g ms", v / 1e6);
  else std::snprintf(text, sizeof text, "%.3g s", v / 1e9);
  return text;
}

Timeline build_timeline(const RunView& run) {
  Timeline t;
  const auto backend = run.metadata.find(std::string(trace_meta::backend));
  t.gpu = backend != run.metadata.end() && backend->second == "gpu";
  t.clock = t.gpu ? "GPU %globaltimer" : "CPU steady clock";

  // Only the kernel's own events carry times; valid stages only (the analysis reports the rest).
  std::vector<size_t> timed;
  const size_t n = std::min(run.recorded_events, run.headers.size());
  for (size_t i = 0; i < run.headers.size(); ++i) {
    const EventHeader& h = run.headers[i];
    const bool valid_stage = h.stage >= 0 && static_cast<size_t>(h.stage) < run.stages.size();
    if (i < n && valid_stage && h.time_ns != 0) timed.push_back(i);
    else ++t.untimed_events;
  }
  if (timed.empty()) return t;
  // time_ns holds uint64 bits read from the file, so any value. A reading more than
  // kMaxFromMedianNs from the run's median, or past int64, is no time of this run (real clocks are
  // far below 2^63 ns, and a run lasts far less than weeks): it is left out as untimed, so that
  // every offset and difference below fits in int64.
  constexpr uint64_t kMaxFromMedianNs = uint64_t{1} << 50;  // 13 days
  std::vector<uint64_t> readings;
  readings.reserve(timed.size());
  for (size_t i : timed) readings.push_back(run.headers[i].time_ns);
  std::nth_element(readings.begin(), readings.begin() + static_cast<std::ptrdiff_t>(readings.size() / 2), readings.end());
  const uint64_t median = readings[readings.size() / 2];
  const auto plausible = [&](size_t i) {
    const uint64_t v = run.headers[i].time_ns;
    return v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
           (v > median ? v - median : median - v) <= kMaxFromMedianNs;
  };
  const size_t before = timed.size();
  timed.erase(std::remove_if(timed.begin(), timed.end(), [&](size_t i) { return !plausible(i); }), timed.end());
  t.untimed_events += before - timed.size();
  if (timed.empty()) return t;
  auto time_of = [&](size_t i) { return static_cast<int64_t>(run.headers[i].time_ns); };
  t.origin_ns = std::numeric_limits<int64_t>::max();
  for (size_t i : timed) t.origin_ns = std::min(t.origin_ns, time_of(i));

  // Each block's events in time order: a box from the previous one to this one.
  std::map<std::pair<int32_t, int32_t>, std::vector<size_t>> blocks;  // (pass, block) -> events
  for (size_t i : timed) blocks[{run.stage_of(i).pass, run.headers[i].block}].push_back(i);
  std::vector<TimelineBox> boxes;
  boxes.reserve(timed.size());
  for (auto& [key, events] : blocks) {
    std::stable_sort(events.begin(), events.end(), [&](size_t a, size_t b) { return time_of(a) < time_of(b); });
    for (size_t k = 0; k < events.size(); ++k) {
      TimelineBox b;
      b.event = events[k];
      b.end_ns = time_of(events[k]) - t.origin_ns;
      b.start_ns = k == 0 ? b.end_ns : time_of(events[k - 1]) - t.origin_ns;
      boxes.push_back(b);
    }
  }

  for (size_t i : timed) t.lanes.push_back(run.headers[i].where);
  std::sort(t.lanes.begin(), t.lanes.end());
  t.lanes.erase(std::unique(t.lanes.begin(), t.lanes.end()), t.lanes.end());
  for (TimelineBox& b : boxes) {
    const int32_t where = run.headers[b.event].where;
    b.lane = static_cast<int32_t>(std::lower_bound(t.lanes.begin(), t.lanes.end(), where) - t.lanes.begin());
    t.end_ns = std::max(t.end_ns, b.end_ns);
  }
  std::sort(boxes.begin(), boxes.end(), [](const TimelineBox& a, const TimelineBox& b) {
    return std::tie(a.lane, a.start_ns, a.end_ns, a.event) < std::tie(b.lane, b.start_ns, b.end_ns, b.event);
  });
  t.boxes = std::move(boxes);

  // Spans per stage and per (stage, split).
  std::map<std::pair<int32_t, int32_t>, TimelineSpan> spans;
  auto add = [](TimelineSpan& s, const TimelineBox& b) {
    if (s.events == 0) s.first_ns = s.last_ns = b.end_ns;
    s.first_ns = std::min(s.first_ns, b.end_ns);
    s.last_ns = std::max(s.last_ns, b.end_ns);
    // Saturating: a span sums many boxes, each up to the run's length.
    const int64_t busy = b.end_ns - b.start_ns;
    s.busy_ns = s.busy_ns > std::numeric_limits<int64_t>::max() - busy ? std::numeric_limits<int64_t>::max() : s.busy_ns + busy;
    ++s.events;
  };
  for (const TimelineBox& b : t.boxes) {
    const EventHeader& h = run.headers[b.event];
    TimelineSpan& whole = spans[{h.stage, -1}];
    whole.stage = h.stage;
    add(whole, b);
    if (h.split >= 0) {
      TimelineSpan& s = spans[{h.stage, h.split}];
      s.stage = h.stage;
      s.split = h.split;
      add(s, b);
    }
  }
  for (const auto& [key, span] : spans) (key.second < 0 ? t.stages : t.splits).push_back(span);
  return t;
}

double TimelineAxis::to_axis(double ns) const {
  double removed = 0;
  for (const Cut& c : cuts) {
    const double b = static_cast<double>(c.begin_ns), e = static_cast<double>(c.end_ns);
    if (ns <= b) break;
    if (ns < e) return b - removed + (ns - b) / (e - b) * c.shown;  // inside the gap: linear in it
    removed += (e - b) - c.shown;
  }
  return ns - removed;
}

double TimelineAxis::to_ns(double axis) const {
  double removed = 0;
  for (const Cut& c : cuts) {
    const double b = static_cast<double>(c.begin_ns), e = static_cast<double>(c.end_ns);
    const double ab = b - removed;  // where the gap starts on the axis
    if (axis <= ab) break;
    if (axis < ab + c.shown) return b + (axis - ab) / c.shown * (e - b);
    removed += (e - b) - c.shown;
  }
  return axis + removed;
}

TimelineAxis timeline_axis(const Timeline& t, bool collapse_gaps, double min_fraction, double shown_fraction) {
  TimelineAxis axis;
  axis.length = static_cast<double>(t.end_ns);
  if (!collapse_gaps || t.boxes.empty() || t.end_ns <= 0) return axis;
  // Busy intervals merged in time order; what lies between them is idle.
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const TimelineBox& b : t.boxes) spans.emplace_back(b.start_ns, b.end_ns);
  std::sort(spans.begin(), spans.end());
  const double min_gap = min_fraction * static_cast<double>(t.end_ns);
  int64_t busy_until = spans.front().second;
  std::vector<TimelineAxis::Cut> gaps;
  for (const auto& [b, e] : spans) {
    if (static_cast<double>(b - busy_until) > min_gap) gaps.push_back({busy_until, b, 0});
    busy_until = std::max(busy_until, e);
  }
  if (gaps.empty()) return axis;
  double kept = static_cast<double>(t.end_ns);
  for (const auto& g : gaps) kept -= static_cast<double>(g.end_ns - g.begin_ns);
  // Everything idle: nothing to keep in proportion; leave the axis as it is.
  if (kept <= 0) return axis;
  const double shown = std::max(shown_fraction * kept, 1.0);
  for (auto& g : gaps) g.shown = std::min(shown, static_cast<double>(g.end_ns - g.begin_ns));
  axis.cuts = std::move(gaps);
  axis.length = axis.to_axis(static_cast<double>(t.end_ns));
  return axis;
}

int32_t straggler_split(const Timeline& t, int32_t stage) {
  int32_t best = -1;
  int64_t last = std::numeric_limits<int64_t>::min();
  for (const TimelineSpan& s : t.splits)
    if (s.stage == stage && s.last_ns > last) last = s.last_ns, best = s.split;
  return best;
}

}  // namespace ts
