#include "app/model/viewer/ab_pairing.h"

#include <cmath>
#include <limits>
#include <string>

namespace ts {

std::optional<size_t> ABPairing::b_event_for(const EventKey& key) const {
  if (!per_event) return std::nullopt;
  const auto it = b_by_key.find(key);
  if (it == b_by_key.end()) return std::nullopt;
  return it->second;
}

ABPairing pair_events(const RunView& a, const RunView& b) {
  ABPairing p;
  p.per_event = a.tiling == b.tiling && a.block_m == b.block_m && a.head_dim == b.head_dim;
  if (!p.per_event) return p;
  for (size_t i = 0; i < b.num_events(); ++i) p.b_by_key.try_emplace(event_key(b.headers[i]), i);
  return p;
}

FloatGrid event_o_grid(const RunView& run, size_t event, bool normalised) {
  const RunEvent e = run.event(event);
  const int32_t rows = e.header.rows, d = run.head_dim;
  FloatGrid g;
  g.rows = rows;
  g.cols = d;
  g.values.resize(static_cast<size_t>(rows) * static_cast<size_t>(d));
  const bool divide = normalised && e.header.convention == static_cast<int32_t>(Convention::unnormalized);
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

FloatGrid final_output_grid(const RunView& run, int32_t batch, int32_t head) {
  const AttentionConfig& c = run.config;
  FloatGrid g;
  g.rows = c.seq_q;
  g.cols = c.head_dim;
  const size_t cells = static_cast<size_t>(g.rows * g.cols);
  g.values.assign(cells, std::numeric_limits<float>::quiet_NaN());
  if (batch < 0 || head < 0 || batch >= c.batch || head >= c.heads) return g;
  if (run.output) {
    const int64_t base = ((static_cast<int64_t>(batch) * c.heads) + head) * c.seq_q * c.head_dim;
    for (size_t i = 0; i < cells; ++i) g.values[i] = run.output->get_float(base + static_cast<int64_t>(i));
    return g;
  }
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (h.stage != static_cast<int32_t>(Stage::final_output) || h.batch != batch || h.head != head) continue;
    const FloatGrid o = event_o_grid(run, i, true);
    const int64_t row0 = static_cast<int64_t>(h.q_tile) * run.block_m;
    for (int64_t r = 0; r < o.rows && row0 + r < g.rows; ++r)
      for (int64_t col = 0; col < o.cols; ++col)
        g.values[static_cast<size_t>((row0 + r) * g.cols + col)] = o.values[static_cast<size_t>(r * o.cols + col)];
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
  const EventKey k = event_key(a.headers[a_event]);
  out.what = stage_name(k.stage) + "  b" + std::to_string(k.batch) + " h" + std::to_string(k.head) + "  query tile " +
             std::to_string(k.q_tile) + (k.split >= 0 ? "  split " + std::to_string(k.split) : std::string()) +
             (k.stage == static_cast<int32_t>(Stage::fa1_step) ? "  kv tile " + std::to_string(k.step) : std::string()) +
             (normalised ? "  O/l" : "  O (as stored)");
  out.first_row = static_cast<int64_t>(k.q_tile) * a.block_m;
  out.a = event_o_grid(a, a_event, normalised);
  out.b = event_o_grid(b, b_event, normalised);
  out.diff = grid_difference(out.a, out.b);
  return out;
}

ABArrays ab_final_arrays(const RunView& a, const RunView& b, int32_t batch, int32_t head) {
  ABArrays out;
  out.what = "final output  b" + std::to_string(batch) + " h" + std::to_string(head) + "  (tilings differ: the runs meet here)";
  out.a = final_output_grid(a, batch, head);
  out.b = final_output_grid(b, batch, head);
  out.diff = grid_difference(out.a, out.b);
  return out;
}

}  // namespace ts
