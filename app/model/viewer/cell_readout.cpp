#include "app/model/viewer/cell_readout.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/state_compare.h"

namespace ts {
namespace {

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char text[48];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

}  // namespace

std::optional<CellReadout> read_cell(const EventComparison& cmp, const Tolerance& tolerance, int64_t row,
                                     int32_t column, bool normalised, size_t event_index) {
  if (row < 0 || row >= cmp.rows || column < 0 || column >= cmp.head_dim) return std::nullopt;
  if (static_cast<size_t>(row) >= cmp.row_errors.size()) return std::nullopt;
  const EventHeader& h = cmp.header;
  CellReadout r;
  r.event = event_index;
  r.batch = h.batch;
  r.head = h.head;
  r.kv_head = h.kv_head;
  r.query = int64_t{h.q_begin} + row;
  r.column = column;
  r.split = h.split;
  r.step = h.step;
  r.stage = cmp.stage.name;
  r.keys = describe_keys(cmp.keys);
  r.quantity = normalised ? "O/l" : "O";
  const size_t at = static_cast<size_t>(row) * static_cast<size_t>(cmp.head_dim) + static_cast<size_t>(column);
  const FloatGrid& got = normalised ? cmp.o_norm_trace : cmp.o_trace;
  const FloatGrid& want = normalised ? cmp.o_norm_reference : cmp.o_reference;
  r.trace = got.values[at];
  r.reference = want.values[at];
  // compare_event's own measures: value_error, and the row's bar for the quantity.
  r.abs_error = value_error(r.trace, r.reference);
  r.rel_error = r.abs_error == 0 ? 0.0
                : r.reference != 0 ? r.abs_error / std::fabs(r.reference)
                                   : std::numeric_limits<double>::infinity();
  const RowError& e = cmp.row_errors[static_cast<size_t>(row)];
  const StageBars& bars = tolerance.for_stage(cmp.stage);
  r.allowed = normalised ? bars.o_norm.bar(e.o_norm_ref, e.l_ref) : bars.o_raw.bar(e.o_raw_ref, e.l_ref);
  r.ratio = bar_ratio(r.abs_error, r.allowed);
  r.fails = at < cmp.cell_fails.size() && cmp.cell_fails[at] != 0;
  return r;
}

std::optional<std::pair<int64_t, int32_t>> worst_cell_of(const EventComparison& cmp, const Tolerance& tolerance,
                                                         bool normalised) {
  std::optional<std::pair<int64_t, int32_t>> best;
  double best_ratio = -1;
  for (int64_t row = 0; row < cmp.rows; ++row)
    for (int32_t c = 0; c < cmp.head_dim; ++c) {
      const std::optional<CellReadout> r = read_cell(cmp, tolerance, row, c, normalised, cmp.event_index);
      if (!r) continue;
      const double ratio = std::isnan(r->ratio) ? std::numeric_limits<double>::infinity() : r->ratio;
      if (ratio > best_ratio) best_ratio = ratio, best = std::pair{row, c};
    }
  return best;
}

std::string to_text(const CellReadout& r) {
  std::string s;
  s += "event: " + std::to_string(r.event) + " (" + r.stage + ")\n";
  s += "batch: " + std::to_string(r.batch) + "\nhead: " + std::to_string(r.head);
  if (r.kv_head >= 0 && r.kv_head != r.head) s += " (kv head " + std::to_string(r.kv_head) + ")";
  s += "\nquery row: " + std::to_string(r.query) + "\ncolumn: " + std::to_string(r.column) + "\n";
  if (r.split >= 0) s += "split: " + std::to_string(r.split) + "\n";
  s += "place: " + kEventOfItsBlock.numbered(r.step) + "\nkeys: " + r.keys + "\n";
  s += r.quantity + " trace: " + number(r.trace) + "\n";
  s += r.quantity + " reference: " + number(r.reference) + "\n";
  s += "abs error: " + number(r.abs_error) + "\nrel error: " + number(r.rel_error) + "\n";
  s += "allowed: " + number(r.allowed) + "\nerror / tolerance: " + number(r.ratio) + (r.ratio > 1 ? " (over the tolerance)" : " (within it)") + "\n";
  return s;
}

}  // namespace ts
