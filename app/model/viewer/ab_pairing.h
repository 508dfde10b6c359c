// A/B side by side: which event of run B stands beside an event of run A, and the arrays the A/B
// panel draws (A | B | A - B). Where the A/B comparison compared the runs event by event
// (ABReport::tilings_match: one tiling of our kernels, or the same stage table and event
// identities), events pair one to one by identity (stage, batch, head, query rows, split, step)
// and the keys they cover; otherwise the runs meet only at the final output, compared row by row
// for a (batch, head). No GL.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/model/analysis/event_identity.h"
#include "app/model/float_grid.h"
#include "app/model/run_view.h"

namespace ts {

// What makes two runs' events the same point of the kernel: the identity and the key ranges.
using PairedIdentity = std::pair<EventKey, std::vector<std::pair<int32_t, int32_t>>>;
PairedIdentity paired_identity(const EventHeader& h);

struct ABPairing {
  bool per_event = false;                      // compared event by event
  std::map<PairedIdentity, size_t> b_by_identity;  // B's events (per_event only)

  std::optional<size_t> b_event_for(const EventHeader& a_event) const;
};

// `per_event`: whether the A/B comparison compared the runs event by event (tilings_match).
ABPairing pair_events(const RunView& b, bool per_event);

// An event's O rows x head_dim: O/l (`normalised`: the attention output so far; a row with
// l = 0 and O = 0, which saw no key, is 0; a normalised event's O as stored) or O as stored. Rows
// past the event's are not shown.
FloatGrid event_o_grid(const RunView& run, size_t event, bool normalised);

// The final output of (batch, head), seq_q x head_dim: the kernel's output tensor when the run
// has it, else assembled from the events of its last final-kind stage; NaN where neither says
// anything.
FloatGrid final_output_grid(const RunView& run, int32_t batch, int32_t head);

// a - b cell by cell (NaN where either is NaN; equal infinities give 0). Throws GridShapeError
// when the shapes differ.
FloatGrid grid_difference(const FloatGrid& a, const FloatGrid& b);

struct ABArrays {
  std::string what;        // describe_event's words and "O/l", or "final output, batch 0 head 1 ..."
  int64_t first_row = 0;   // query index of row 0
  FloatGrid a, b, diff;
};

ABArrays ab_event_arrays(const RunView& a, size_t a_event, const RunView& b, size_t b_event, bool normalised);
ABArrays ab_final_arrays(const RunView& a, const RunView& b, int32_t batch, int32_t head);

}  // namespace ts
