// Which event the viewer shows, and stepping through events in the kernel's own order
// (event_identity.h: kernel_order — a stage's pass first, so the states a merge reads come before
// it, then the block and its steps; Split-K: each split's kv tiles and partial, the reduce merging
// one more split per step, then the final output): [ and ] step, Home / End jump, N goes to the
// next failing event, Shift+N to the first divergence; the slider and playback step the same
// way. The scope is the whole run, or only the selected event's row block (batch, head, query
// rows): how one watches a reduce merge split after split into the final rows. No GL.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/run_view.h"

namespace ts {

enum class StepScope { run, row_block };

class EventStepper {
 public:
  EventStepper() = default;
  // `report` gives each event's verdict (N) and the first divergence (Shift+N).
  EventStepper(const RunView& run, const AnalysisReport& report);

  size_t num_events() const { return order_.size(); }
  // Event indices (into the run) in the kernel's order.
  const std::vector<size_t>& order() const { return order_; }
  // An event's position in order() (the number of events past the end for one out of range).
  size_t position_of(size_t event) const { return event < position_.size() ? position_[event] : order_.size(); }

  std::optional<size_t> selected() const { return selected_; }
  // Selects an event by its index in the run; false (nothing changes) when out of range.
  bool select(size_t event);

  StepScope scope = StepScope::run;
  // The events stepping goes through: all, or the selected event's row block, in the kernel's
  // order.
  std::vector<size_t> scope_events() const;
  // The selected event's position within scope_events() (0 when nothing is selected).
  size_t scope_position() const;
  size_t scope_size() const;
  // Selects the event at a position of scope_events() (clamped): the slider.
  void select_scope_position(size_t position);

  // [ and ]: moves by `delta` positions within the scope, stopping at its ends. Returns
  // whether the selection moved.
  bool step(long delta);
  bool to_first();  // Home
  bool to_last();   // End
  // N: the next failing event after the selected one in the kernel's order (whole run,
  // whatever the scope); false when there is none after it.
  bool next_failing();
  // Shift+N: the first divergence (the first failing event written, when the divergence is a
  // missing event); false for a clean run.
  bool to_first_divergence();
  std::optional<size_t> first_divergence_event() const { return first_divergence_; }

  bool fails(size_t event) const { return event < failing_.size() && failing_[event]; }
  // Failing events in the whole run.
  size_t num_failing() const;

 private:
  std::vector<size_t> order_;     // event indices in the kernel's order
  std::vector<size_t> position_;  // event index -> position in order_
  std::vector<RowBlock> block_of_;  // event index -> its row block
  std::vector<bool> failing_;
  std::optional<size_t> first_divergence_;
  std::optional<size_t> selected_;
};

// Play / pause at a number of events per second: advance() says how many steps a frame of
// `seconds` is worth (the remainder carries over to the next frame).
struct Playback {
  bool playing = false;
  double events_per_second = 4.0;
  double carried = 0.0;

  void play() { playing = true, carried = 0.0; }
  void pause() { playing = false, carried = 0.0; }
  void toggle() { playing ? pause() : play(); }
  // Steps due after `seconds` more of playing (0 while paused; speed clamped to [0.25, 240]).
  long advance(double seconds);
  // The pause a headless or waiting caller may sleep until the next step.
  double seconds_to_next_step() const;
};

}  // namespace ts
