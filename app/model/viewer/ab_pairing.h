// A/B side by side: which event of run B stands beside an event of run A, and the arrays the A/B
// panel draws (A | B | A - B). Where the two tilings match, events pair one to one by identity
// (stage, batch, head, query tile, split, step); where they do not, the runs meet only at the
// final output, compared row by row for a (batch, head). No GL.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "app/model/analysis/event_identity.h"
#include "app/model/float_grid.h"
#include "app/model/run_view.h"

namespace ts {

struct ABPairing {
  bool per_event = false;               // the tilings match: event by event
  std::map<EventKey, size_t> b_by_key;  // B's events by identity (per_event only)

  std::optional<size_t> b_event_for(const EventKey& key) const;
};

ABPairing pair_events(const RunView& a, const RunView& b);

// An event's O rows x head_dim: O/l (`normalised`: the attention output so far; a row with
// l = 0 and O = 0, which saw no key, is 0) or O as stored. Rows past the event's are not shown.
FloatGrid event_o_grid(const RunView& run, size_t event, bool normalised);

// The final output of (batch, head), seq_q x head_dim: the launch's output tensor when the run
// has it, else assembled from the final-stage events; NaN where neither says anything.
FloatGrid final_output_grid(const RunView& run, int32_t batch, int32_t head);

// a - b cell by cell (NaN where either is NaN; equal infinities give 0). Throws GridShapeError
// when the shapes differ.
FloatGrid grid_difference(const FloatGrid& a, const FloatGrid& b);

struct ABArrays {
  std::string what;        // "splitk.reduce b0 h0 q-tile 1 split 3, O/l" or "final output b0 h1"
  int64_t first_row = 0;   // query index of row 0
  FloatGrid a, b, diff;
};

ABArrays ab_event_arrays(const RunView& a, size_t a_event, const RunView& b, size_t b_event, bool normalised);
ABArrays ab_final_arrays(const RunView& a, const RunView& b, int32_t batch, int32_t head);

}  // namespace ts
