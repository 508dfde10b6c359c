#include "app/model/viewer/event_stepper.h"

#include <algorithm>
#include <cmath>

namespace ts {

EventStepper::EventStepper(const RunView& run, const AnalysisReport& report) {
  const size_t n = run.num_events();
  block_of_.resize(n);
  for (size_t i = 0; i < n; ++i) block_of_[i] = row_block(run.headers[i]);
  // Stable: events with equal keys (duplicates in a damaged trace) keep the file's order.
  order_ = kernel_order(run.headers, run.stages);
  position_.resize(n);
  for (size_t p = 0; p < n; ++p) position_[order_[p]] = p;

  failing_.assign(n, false);
  for (size_t i = 0; i < n && i < report.events.size(); ++i)
    failing_[i] = report.events[i].compared && !report.events[i].passes;
  const Divergence& d = report.first_divergence;
  if (d.found) {
    const int64_t e = d.event_index >= 0 ? d.event_index : d.first_failing_event;
    if (e >= 0 && static_cast<size_t>(e) < n) first_divergence_ = static_cast<size_t>(e);
  }
}

bool EventStepper::select(size_t event) {
  if (event >= order_.size()) return false;
  selected_ = event;
  return true;
}

std::vector<size_t> EventStepper::scope_events() const {
  if (scope == StepScope::run || !selected_) return order_;
  std::vector<size_t> out;
  const RowBlock& b = block_of_[*selected_];
  for (size_t e : order_)
    if (block_of_[e] == b) out.push_back(e);
  return out;
}

size_t EventStepper::scope_size() const {
  if (scope == StepScope::run || !selected_) return order_.size();
  return static_cast<size_t>(std::count(block_of_.begin(), block_of_.end(), block_of_[*selected_]));
}

size_t EventStepper::scope_position() const {
  if (!selected_) return 0;
  if (scope == StepScope::run) return position_[*selected_];
  const RowBlock& b = block_of_[*selected_];
  size_t p = 0;
  for (size_t i = 0; i < position_[*selected_]; ++i) p += block_of_[order_[i]] == b;
  return p;
}

void EventStepper::select_scope_position(size_t position) {
  const std::vector<size_t> events = scope_events();
  if (events.empty()) return;
  selected_ = events[std::min(position, events.size() - 1)];
}

bool EventStepper::step(long delta) {
  if (order_.empty()) return false;
  if (!selected_) {
    selected_ = order_.front();
    return true;
  }
  const std::vector<size_t> events = scope_events();
  const long at = static_cast<long>(scope_position());
  const long to = std::clamp<long>(at + delta, 0, static_cast<long>(events.size()) - 1);
  if (to == at) return false;
  selected_ = events[static_cast<size_t>(to)];
  return true;
}

bool EventStepper::to_first() {
  if (order_.empty()) return false;
  const std::vector<size_t> events = scope_events();
  const bool moved = selected_ != events.front();
  selected_ = events.front();
  return moved;
}

bool EventStepper::to_last() {
  if (order_.empty()) return false;
  const std::vector<size_t> events = scope_events();
  const bool moved = selected_ != events.back();
  selected_ = events.back();
  return moved;
}

bool EventStepper::next_failing() {
  const size_t from = selected_ ? position_[*selected_] + 1 : 0;
  for (size_t p = from; p < order_.size(); ++p)
    if (failing_[order_[p]]) {
      selected_ = order_[p];
      return true;
    }
  return false;
}

bool EventStepper::to_first_divergence() {
  if (!first_divergence_) return false;
  selected_ = first_divergence_;
  return true;
}

size_t EventStepper::num_failing() const {
  return static_cast<size_t>(std::count(failing_.begin(), failing_.end(), true));
}

long Playback::advance(double seconds) {
  if (!playing || !(seconds > 0)) return 0;
  const double rate = std::clamp(events_per_second, 0.25, 240.0);
  carried += seconds * rate;
  // A hair of slack: 60 frames of 1/60 s at 4 a second add up to 3.9999999, which is 4 steps.
  const double steps = std::floor(carried + 1e-9);
  carried = std::max(0.0, carried - steps);
  return static_cast<long>(steps);
}

double Playback::seconds_to_next_step() const {
  const double rate = std::clamp(events_per_second, 0.25, 240.0);
  return std::max(0.0, (1.0 - carried) / rate);
}

}  // namespace ts
