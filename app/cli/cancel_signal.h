// Ctrl-C (SIGINT), SIGTERM and SIGHUP (the terminal closed) as a cancel request: while a
// CancelOnSignal is alive, the signals set a flag that the launcher polls between blocks and
// the file writers check between chunks and before they rename (CancelWrites, atomic_file.h),
// so a run stops cleanly, nothing half-written is left behind and the command exits 130; the
// previous handlers come back when it goes. A signal the program was started with ignored
// (nohup, a background job of a script) stays ignored.
//
// Work that cannot stop part-way and writes nothing (an export's analysis, a diff) asks instead for
// OnSignal::exit_now: a signal then ends the process at once with exit code 130 (there is
// nothing to clean up yet), until cancel_from_now_on() switches to the flag before writing.
#pragma once

#include <atomic>
#include <csignal>

namespace ts::cli {

enum class OnSignal { cancel, exit_now };

class CancelOnSignal {
 public:
  explicit CancelOnSignal(OnSignal on_signal = OnSignal::cancel);
  ~CancelOnSignal();
  CancelOnSignal(const CancelOnSignal&) = delete;
  CancelOnSignal& operator=(const CancelOnSignal&) = delete;

  // A signal from now on sets the flag (it may already be set: check requested()).
  void cancel_from_now_on();
  const std::atomic<bool>* flag() const;
  bool requested() const;

 private:
  struct sigaction old_int_{}, old_term_{}, old_hup_{};
};

}  // namespace ts::cli
