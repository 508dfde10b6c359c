// "How much" for one cell of the detail view: the picked O (or O/l) cell of the selected event,
// with its place in the run (batch, head, query row, head-dim column, the event's place in its
// block, the keys the event covers),
// the trace and reference values, the absolute and relative error, the error the tolerance
// allows there and the ratio of the two. The allowed error is the tolerance's bar for the cell's
// row, exactly as compare_event judges the cell (tolerance.h: atol + rtol x the row's largest
// |reference|; raw O: atol x l): the same arithmetic, not a second copy of the rule.
// No GL: the detail panel shows it and copies to_text() to the clipboard (Ctrl+C).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/tolerance.h"

namespace ts {

struct CellReadout {
  size_t event = 0;
  int32_t batch = 0, head = 0, kv_head = -1;
  int64_t query = 0;          // query index within the batch's sequence
  int32_t column = 0;         // head-dim column
  int32_t split = -1, step = 0;  // step: the event's number in its block (kEventOfItsBlock)
  std::string stage;          // the stage's name
  std::string keys;           // "keys 0-63"
  std::string quantity;       // "O/l" or "O"
  double trace = 0, reference = 0;
  double abs_error = 0;       // |trace - reference| (inf for NaN or a one-sided infinity)
  double rel_error = 0;       // abs_error / |reference| (inf where the reference is 0 and the error not)
  double allowed = 0;         // the row's bar for this quantity
  double ratio = 0;           // abs_error / allowed: > 1 fails
  bool fails = false;         // the cell is over its bar (either quantity), as compare_event says
};

// The readout of cell (row, column) of `cmp` (row within the event), O/l when `normalised`, raw
// O otherwise; nullopt when the cell is outside the event.
std::optional<CellReadout> read_cell(const EventComparison& cmp, const Tolerance& tolerance, int64_t row,
                                     int32_t column, bool normalised, size_t event_index);

// The cell of `cmp` furthest over its bar (largest error / tolerance; NaN and one-sided
// infinities first), in the quantity shown: the "worst cell" of the event. nullopt for no cell.
std::optional<std::pair<int64_t, int32_t>> worst_cell_of(const EventComparison& cmp, const Tolerance& tolerance,
                                                         bool normalised);

// Several lines of "name: value", for the clipboard and the panel's tooltip.
std::string to_text(const CellReadout& r);

}  // namespace ts
