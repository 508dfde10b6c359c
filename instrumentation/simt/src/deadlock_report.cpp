// The report of a deadlocked block: no thread can run, yet not all have finished. Waiting
// threads are grouped by what they wait on and where, so that e.g. "half a warp in __syncwarp,
// the rest in __syncthreads" reads as two lines with their file:line and thread ranges.
#include <algorithm>
#include <vector>

#include "instrumentation/simt/src/block_run.h"
#include "instrumentation/simt/src/diagnostics.h"

namespace simt::detail {

namespace {

struct WaitGroup {
  std::string what;  // "__syncthreads at f:12"
  std::vector<unsigned> threads;
};

std::string thread_list(const std::vector<SimtThread>& all, const std::vector<unsigned>& ids) {
  constexpr size_t kShown = 4;
  std::string text;
  for (size_t i = 0; i < ids.size() && i < kShown; ++i) {
    if (i > 0) text += ", ";
    text += coordinates_text(all[ids[i]].coordinates.thread_idx);
  }
  if (ids.size() > kShown)
    text += ", ... " + coordinates_text(all[ids.back()].coordinates.thread_idx);
  return text;
}

}  // namespace

std::string BlockRun::deadlock_report() const {
  std::vector<WaitGroup> groups;
  for (const SimtThread& t : threads_) {
    std::string what;
    if (t.phase == ThreadPhase::at_barrier) {
      what = "__syncthreads at " + place_text(barrier_where_);
    } else if (t.phase == ThreadPhase::in_warp_op) {
      const WarpState& warp = warps_[t.warp];
      for (unsigned i = 0; i < warp.pending_count; ++i) {
        const PendingExchange& p = warp.pending[i];
        if ((p.arrived >> t.lane) & 1u) {
          what = std::string(exchange_name(p.op, p.collective)) + "(mask " + mask_text(p.mask) +
                 ") at " + place_text(p.where);
        }
      }
    }
    if (what.empty()) continue;
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const WaitGroup& g) { return g.what == what; });
    if (group == groups.end()) group = groups.insert(groups.end(), WaitGroup{what, {}});
    group->threads.push_back(t.linear);
  }
  std::string report = "deadlock in block " + coordinates_text(coordinates_.block_idx) +
                       ": no thread can continue and not all have finished;";
  for (const WaitGroup& g : groups) {
    report += " " + std::to_string(g.threads.size()) + " thread(s) wait in " + g.what +
              " (thread " + thread_list(threads_, g.threads) + ");";
  }
  if (exited_count_ > 0) {
    report += " " + std::to_string(exited_count_) + " thread(s) have exited (first: thread " +
              coordinates_text(threads_[first_exited_].coordinates.thread_idx) + ");";
  }
  report.pop_back();
  return report;
}

}  // namespace simt::detail
