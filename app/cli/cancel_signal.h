// Ctrl-C (SIGINT) and SIGTERM as a cancel request: while a CancelOnSignal is alive, the
// signals set a flag that the launcher polls between blocks, so a run stops cleanly and
// nothing half-written is left behind; the previous handlers come back when it goes.
#pragma once

#include <atomic>
#include <csignal>

namespace ts::cli {

class CancelOnSignal {
 public:
  CancelOnSignal();
  ~CancelOnSignal();
  CancelOnSignal(const CancelOnSignal&) = delete;
  CancelOnSignal& operator=(const CancelOnSignal&) = delete;

  const std::atomic<bool>* flag() const;
  bool requested() const;

 private:
  struct sigaction old_int_{}, old_term_{};
};

}  // namespace ts::cli
