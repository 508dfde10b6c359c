#include "app/cli/cancel_signal.h"

#include <unistd.h>

#include "app/cli_common/cli_errors.h"

namespace ts::cli {
namespace {

// Lock-free, so using them is async-signal-safe.
std::atomic<bool> g_cancel{false};
std::atomic<bool> g_exit_now{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_cancel_signal(int) {
  if (g_exit_now.load()) {
    static const char kMessage[] = "\ntilescope: cancelled; nothing was written\n";
    ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    (void)ignored;
    ::_exit(kExitCancelled);
  }
  if (!g_cancel.exchange(true)) {
    static const char kMessage[] = "\ntilescope: cancelling...\n";
    ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    (void)ignored;
  }
}

// A signal ignored when the program started stays ignored: `nohup tilescope capture ... &` must
// outlive the terminal's SIGHUP, and a background job of a non-interactive shell ignores Ctrl-C.
void install(int signal_number, const struct sigaction& sa, struct sigaction* old) {
  sigaction(signal_number, nullptr, old);
  if (old->sa_handler != SIG_IGN) sigaction(signal_number, &sa, nullptr);
}

}  // namespace

CancelOnSignal::CancelOnSignal(OnSignal on_signal) {
  g_cancel.store(false);
  g_exit_now.store(on_signal == OnSignal::exit_now);
  struct sigaction sa {};
  sa.sa_handler = on_cancel_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  install(SIGINT, sa, &old_int_);
  install(SIGTERM, sa, &old_term_);
  install(SIGHUP, sa, &old_hup_);
}

CancelOnSignal::~CancelOnSignal() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
  g_exit_now.store(false);
}

void CancelOnSignal::cancel_from_now_on() { g_exit_now.store(false); }
const std::atomic<bool>* CancelOnSignal::flag() const { return &g_cancel; }
bool CancelOnSignal::requested() const { return g_cancel.load(); }

}  // namespace ts::cli
