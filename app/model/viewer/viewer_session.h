// What the viewer has open and what is selected: run A (and, for A/B, run B with the A/B
// report), the selected event and stepping (event_stepper.h), the (batch, head) pair and the
// grid the overview shows (event_grids.h), and the selected event beside its reference
// (compare_event, made when the selection changes). The panels read it; their clicks and keys
// change it. No GL.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/model/analysis/event_comparison.h"
#include "app/model/viewer/ab_pairing.h"
#include "app/model/viewer/event_grids.h"
#include "app/model/viewer/event_stepper.h"
#include "app/model/viewer/loaded_run.h"
#include "app/model/viewer/row_block_prefetch.h"

namespace ts {

// --select: which event to show first.
struct SelectRequest {
  bool first_divergence = false;
  std::optional<size_t> event;  // index into the run's events
};
// "first-divergence" or "event:N"; throws std::invalid_argument naming the text otherwise.
SelectRequest parse_select_request(const std::string& text);

class ViewerSession {
 public:
  // Shows `run` (replacing any run A and dropping run B): the first divergence selected, else
  // the first event in the kernels' order.
  void open(LoadedRun run);
  void close();
  bool has_run() const { return a_.valid(); }
  const LoadedRun& run() const { return a_; }
  const RunView& view() const { return *a_.run; }
  const AnalysisReport& report() const { return *a_.report; }

  EventStepper& stepper() { return stepper_; }
  const EventStepper& stepper() const { return stepper_; }
  std::optional<size_t> selected() const { return stepper_.selected(); }
  // The selected event's header (nullptr with no selection).
  const EventHeader* selected_header() const;
  // Applies --select. Throws std::out_of_range naming the index when it is past the events;
  // returns false when there is nothing to select (a clean run has no first divergence).
  bool apply(const SelectRequest& request);

  // The (batch, head) the overview shows: the selected event's (the first traced pair before
  // any selection).
  std::pair<int32_t, int32_t> pair() const;
  const std::vector<std::pair<int32_t, int32_t>>& pairs() const { return pairs_; }
  // Shows another pair: selects its first failing event in the kernels' order, else its first.
  void select_pair(int32_t batch, int32_t head);

  // Which error grid the overview shows: kOverviewGrid (the worst of the non-final stages) or a
  // stage's index.
  int32_t grid_stage = kOverviewGrid;
  // That grid of the shown pair; for kOverviewGrid when the pair has no non-final stage, the
  // first grid it has (a trace of the output alone). nullptr when there is none.
  const ErrorGrid* overview_grid() const;
  // The event navigator of the shown pair (rebuilt when the pair changes).
  const std::vector<NavigatorGrid>& navigator();

  // The selected event beside its reference (cached per event). Throws AnalysisError when the
  // event cannot be compared (its pair's inputs are missing), std::logic_error with no selection.
  // Starts computing the references of the row blocks stepping reaches next
  // (row_block_prefetch.h).
  const EventComparison& comparison();
  // The prefetcher has nothing pending or in progress (tests).
  bool prefetch_idle() const { return !prefetch_ || prefetch_->idle(); }

  // A/B: run B compared with A (its report and the pairing of their events).
  void set_b(ABResult result);
  void clear_b();
  bool has_b() const { return b_.valid() && ab_ != nullptr; }
  const LoadedRun& b() const { return b_; }
  const ABReport& ab_report() const { return *ab_; }
  const ABPairing& pairing() const { return pairing_; }
  // A/B stepping over the events of A where A and B differ (ABReport::differing_events_a): the
  // first in the kernel's order; the next (direction > 0) or previous (< 0) one from the selection
  // in the kernel's order (whole run, whatever the stepping scope). False when there is none.
  bool to_first_ab_difference();
  bool step_ab_difference(int direction);
  size_t num_ab_differences() const { return has_b() ? ab_->differing_events_a.size() : 0; }

  // What the A/B panel draws for the selection: the paired events (compared event by event and
  // B has the selected event), else the final output of the selected pair.
  ABArrays ab_arrays(bool normalised) const;

 private:
  LoadedRun a_, b_;
  std::shared_ptr<const ABReport> ab_;
  ABPairing pairing_;
  EventStepper stepper_;
  std::vector<std::pair<int32_t, int32_t>> pairs_;
  std::optional<std::pair<int32_t, int32_t>> navigator_pair_;
  std::vector<NavigatorGrid> navigator_;
  std::optional<EventComparison> comparison_;
  std::unique_ptr<RowBlockPrefetcher> prefetch_;  // the row blocks stepping reaches next (run A)

  // The row blocks of the events just after and before the selection in the stepping scope,
  // other than the selection's own: next, previous, the one after next.
  std::vector<RowBlock> neighbour_blocks() const;
};

}  // namespace ts
