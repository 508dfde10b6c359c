#include "app/model/viewer/ab_pairing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace ts {

PairedIdentity paired_identity(const EventHeader& h) {
  PairedIdentity id{event_key(h), {}};
  for (int32_t k = 0; k < std::clamp(h.num_key_ranges, 0, kMaxKeyRanges); ++k)
    id.second.emplace_back(h.keys[k].begin, h.keys[k].end);
  return id;
}

std::optional<size_t> ABPairing::b_event_for(const EventHeader& a_event) const {
  if (!per_event) return std::nullopt;
  const auto it = b_by_identity.find(paired_identity(a_event));
  if (it == b_by_identity.end()) return std::nullopt;
  return it->second;
}

ABPairing pair_events(const RunView& b, bool per_event) {
  ABPairing p;
  p.per_event = per_event;
  if (!per_event) return p;
  for (size_t i = 0; i < b.num_events(); ++i) p.b_by_identity.try_emplace(paired_identity(b.headers[i]), i);
  return p;
}

FloatGrid event_o_grid(const RunView& run, size_t event, bool normalised) {
  const RunEvent e = run.event(event);
  const int32_t rows = e.header.rows, d = run.head_dim;
  FloatGrid g;
  g.rows = rows;
  g.cols = d;
  g.values.resize(static_cast<size_t>(rows) * static_cast<size_t>(d));
  const bool divide = normalised && (e.header.convention & kNormalized) == 0;
  for (int32_t r = 0; r < rows; ++r) {
    const float l = e.l[static_cast<size_t>(r)];
    for (int32_t c = 0; c < d; ++c) {
      const float o = e.o[static_cast<size_t>(r) * static_cast<size_t>(d) + static_cast<size_t>(c)];
      // A row that saw no key holds O = 0, l = 0: its output is 0, not 0/0.
      g.values[static_cast<size_t>(r) * static_cast<size_t>(d) + static_cast<size_t>(c)] =
          !divide ? o : (o == 0.0f && l == 0.0f) ? 0.0f : o / l;
    }
  }
  return g;
}

namespace {

// The stage whose events are the run's final output: the final-kind stage of the latest pass
// (the "output" stage when the run holds the output tensor).
int32_t final_output_stage(const RunView& run) {
  int32_t best = -1;
  for (size_t s = 0; s < run.num_stages(); ++s)
    if (run.stages[s].kind == StageKind::final &&
        (best < 0 || run.stages[s].pass >= run.stages[static_cast<size_t>(best)].pass))
      best = static_cast<int32_t>(s);
  return best;
}

}  // namespace

FloatGrid final_output_grid(const RunView& run, int32_t batch, int32_t head) {
  const AttentionSpec& spec = run.attention;
  FloatGrid g;
  g.rows = spec.seq_q;
  g.cols = spec.head_dim;
  const size_t cells = static_cast<size_t>(g.rows * g.cols);
  g.values.assign(cells, std::numeric_limits<float>::quiet_NaN());
  if (batch < 0 || head < 0 || batch >= spec.batch || head >= spec.heads_q) return g;
  if (run.output) {
    const int64_t base = (int64_t{batch} * spec.heads_q + head) * spec.seq_q * spec.head_dim;
    for (size_t i = 0; i < cells; ++i) g.values[i] = run.output->get_float(base + static_cast<int64_t>(i));
    return g;
  }
  const int32_t stage = final_output_stage(run);
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (stage < 0 || h.stage != stage || h.batch != batch || h.head != head) continue;
    const FloatGrid o = event_o_grid(run, i, true);
    for (int64_t r = 0; r < o.rows && h.q_begin + r < g.rows; ++r)
      for (int64_t col = 0; col < o.cols && col < g.cols; ++col)
        g.values[static_cast<size_t>((h.q_begin + r) * g.cols + col)] = o.values[static_cast<size_t>(r * o.cols + col)];
  }
  return g;
}

FloatGrid grid_difference(const FloatGrid& a, const FloatGrid& b) {
  if (a.rows != b.rows || a.cols != b.cols)
    throw GridShapeError("cannot subtract a " + std::to_string(b.rows) + " x " + std::to_string(b.cols) +
                         " array from a " + std::to_string(a.rows) + " x " + std::to_string(a.cols) + " one");
  FloatGrid d;
  d.rows = a.rows;
  d.cols = a.cols;
  d.values.resize(a.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    const float x = a.values[i], y = b.values[i];
    d.values[i] = (std::isinf(x) && x == y) ? 0.0f : x - y;  // NaN - anything stays NaN
  }
  if (!a.mask.empty() || !b.mask.empty()) {
    d.mask.assign(a.values.size(), 0);
    for (size_t i = 0; i < d.mask.size(); ++i)
      d.mask[i] = (!a.mask.empty() && a.mask[i]) || (!b.mask.empty() && b.mask[i]);
  }
  return d;
}

ABArrays ab_event_arrays(const RunView& a, size_t a_event, const RunView& b, size_t b_event, bool normalised) {
  ABArrays out;
  const EventHeader& h = a.headers[a_event];
  out.what = describe_event(h, a.stages, a.attention) + (normalised ? "  O/l" : "  O (as stored)");
  out.first_row = h.q_begin;
  out.a = event_o_grid(a, a_event, normalised);
  out.b = event_o_grid(b, b_event, normalised);
  out.diff = grid_difference(out.a, out.b);
  return out;
}

ABArrays ab_final_arrays(const RunView& a, const RunView& b, int32_t batch, int32_t head) {
  ABArrays out;
  out.what = "final output, batch " + std::to_string(batch) + " head " + std::to_string(head) +
             "  (the runs' events differ: they meet here)";
  out.a = final_output_grid(a, batch, head);
  out.b = final_output_grid(b, batch, head);
  out.diff = grid_difference(out.a, out.b);
  return out;
}

}  // namespace ts
