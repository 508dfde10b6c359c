#include "app/model/viewer/viewer_session.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace ts {

SelectRequest parse_select_request(const std::string& text) {
  SelectRequest r;
  if (text == "first-divergence") {
    r.first_divergence = true;
    return r;
  }
  const std::string prefix = "event:";
  if (text.rfind(prefix, 0) == 0) {
    size_t n = 0;
    const char* b = text.data() + prefix.size();
    const char* e = text.data() + text.size();
    const auto res = std::from_chars(b, e, n);
    if (res.ec == std::errc() && res.ptr == e && b != e) {
      r.event = n;
      return r;
    }
  }
  throw std::invalid_argument("--select wants first-divergence or event:N (got '" + text + "')");
}

void ViewerSession::open(LoadedRun run) {
  close();
  a_ = std::move(run);
  stepper_ = EventStepper(*a_.run, *a_.report);
  pairs_ = traced_pairs_of(*a_.run);
  if (!stepper_.to_first_divergence() && stepper_.num_events() > 0) stepper_.select(stepper_.order().front());
}

void ViewerSession::close() {
  a_ = {};
  clear_b();
  stepper_ = {};
  pairs_.clear();
  navigator_pair_.reset();
  navigator_.clear();
  comparison_.reset();
  prefetch_.reset();
  grid_stage = kOverviewGrid;
}

const EventHeader* ViewerSession::selected_header() const {
  if (!has_run() || !stepper_.selected()) return nullptr;
  return &a_.run->headers[*stepper_.selected()];
}

bool ViewerSession::apply(const SelectRequest& r) {
  if (!has_run()) return false;
  if (r.event) {
    if (*r.event >= a_.run->num_events())
      throw std::out_of_range("--select event:" + std::to_string(*r.event) + " is past the run's " +
                              std::to_string(a_.run->num_events()) + " events (0.." +
                              std::to_string(a_.run->num_events() - 1) + ")");
    return stepper_.select(*r.event);
  }
  if (r.first_divergence) return stepper_.to_first_divergence();
  return false;
}

std::pair<int32_t, int32_t> ViewerSession::pair() const {
  if (const EventHeader* h = selected_header()) return {h->batch, h->head};
  return pairs_.empty() ? std::pair<int32_t, int32_t>{0, 0} : pairs_.front();
}

void ViewerSession::select_pair(int32_t batch, int32_t head) {
  if (!has_run()) return;
  std::optional<size_t> first, failing;
  for (size_t e : stepper_.order()) {
    const EventHeader& h = a_.run->headers[e];
    if (h.batch != batch || h.head != head) continue;
    if (!first) first = e;
    if (!failing && stepper_.fails(e)) failing = e;
  }
  if (failing) stepper_.select(*failing);
  else if (first) stepper_.select(*first);
}

const ErrorGrid* ViewerSession::overview_grid() const {
  if (!has_run()) return nullptr;
  const auto [b, h] = pair();
  if (grid_stage != kOverviewGrid) return a_.report->grid(grid_stage, b, h);
  return overview_grid_of(*a_.report, b, h);
}

const std::vector<NavigatorGrid>& ViewerSession::navigator() {
  const auto p = pair();
  if (has_run() && navigator_pair_ != p) {
    navigator_ = event_navigator(*a_.run, *a_.report, p.first, p.second);
    navigator_pair_ = p;
  }
  return navigator_;
}

const EventComparison& ViewerSession::comparison() {
  if (!has_run() || !stepper_.selected()) throw std::logic_error("no event is selected");
  const size_t e = *stepper_.selected();
  if (!comparison_ || comparison_->event_index != e) {
    comparison_.reset();
    comparison_ = compare_event(*a_.run, *a_.reference, e);
    if (!prefetch_) prefetch_ = std::make_unique<RowBlockPrefetcher>(a_.reference);
    prefetch_->want(neighbour_blocks());
  }
  return *comparison_;
}

std::vector<RowBlock> ViewerSession::neighbour_blocks() const {
  const std::vector<size_t> scope = stepper_.scope_events();
  const size_t at = stepper_.scope_position();
  auto block_at = [&](size_t position) { return row_block(a_.run->headers[scope[position]]); };
  if (scope.empty()) return {};
  const RowBlock current = block_at(at);
  std::vector<RowBlock> after, before;
  for (size_t p = at + 1; p < scope.size() && after.size() < 2; ++p) {
    const RowBlock b = block_at(p);
    if (b != current && std::find(after.begin(), after.end(), b) == after.end()) after.push_back(b);
  }
  for (size_t p = at; p-- > 0 && before.empty();) {
    const RowBlock b = block_at(p);
    if (b != current) before.push_back(b);
  }
  std::vector<RowBlock> wanted;
  if (!after.empty()) wanted.push_back(after[0]);
  if (!before.empty()) wanted.push_back(before[0]);
  if (after.size() > 1) wanted.push_back(after[1]);
  return wanted;
}

void ViewerSession::set_b(ABResult result) {
  b_ = std::move(result.b);
  ab_ = std::move(result.report);
  pairing_ = has_run() && b_.valid() && ab_ ? pair_events(*b_.run, ab_->tilings_match) : ABPairing{};
}

void ViewerSession::clear_b() {
  b_ = {};
  ab_.reset();
  pairing_ = {};
}

bool ViewerSession::to_first_ab_difference() {
  if (num_ab_differences() == 0) return false;
  return stepper_.select(static_cast<size_t>(ab_->differing_events_a.front()));
}

bool ViewerSession::step_ab_difference(int direction) {
  if (num_ab_differences() == 0 || direction == 0) return false;
  const std::vector<int64_t>& events = ab_->differing_events_a;  // in the kernel's order
  if (!stepper_.selected()) return to_first_ab_difference();
  const size_t here = stepper_.position_of(*stepper_.selected());
  const auto position = [&](int64_t e) { return stepper_.position_of(static_cast<size_t>(e)); };
  if (direction > 0) {
    const auto it = std::upper_bound(events.begin(), events.end(), here,
                                     [&](size_t p, int64_t e) { return p < position(e); });
    return it != events.end() && stepper_.select(static_cast<size_t>(*it));
  }
  const auto it = std::lower_bound(events.begin(), events.end(), here,
                                   [&](int64_t e, size_t p) { return position(e) < p; });
  return it != events.begin() && stepper_.select(static_cast<size_t>(*std::prev(it)));
}

ABArrays ViewerSession::ab_arrays(bool normalised) const {
  if (!has_b()) throw std::logic_error("no run B to compare with");
  if (const EventHeader* h = selected_header()) {
    if (const auto bi = pairing_.b_event_for(*h))
      return ab_event_arrays(*a_.run, *stepper_.selected(), *b_.run, *bi, normalised);
  }
  const auto [batch, head] = pair();
  return ab_final_arrays(*a_.run, *b_.run, batch, head);
}

}  // namespace ts
