// A one-line progress bar on stderr ("capturing: running kernels [#######-------]  48%
// 1.2k/2.5k blocks  3.1 s"), redrawn in place at most ten times a second. Updates come from
// worker threads; a command's phases (set_phase) each count their own work, the clock runs
// from the bar's creation. The bar stays hidden for the first half second so that short runs
// print nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace ts::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, bool enabled);
  ~ProgressBar();  // clears the line if it was drawn
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(uint64_t done, uint64_t total);  // thread-safe
  // The work the next updates count: shown after the label ("running kernels"), and its unit
  // ("blocks"; "bytes" are shown in KiB/MiB/GiB). Thread-safe.
  void set_phase(std::string phase, std::string unit);
  void finish();                               // clears the line (idempotent)

  // Whether stderr is a terminal (the default for showing the bar).
  static bool stderr_is_terminal();

 private:
  std::string label_;
  std::string phase_, unit_ = "blocks";
  bool enabled_;
  bool drawn_ = false;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace ts::cli
