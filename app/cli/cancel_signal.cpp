#include "app/cli/cancel_signal.h"

#include <unistd.h>

namespace ts::cli {
namespace {

// Lock-free, so setting it is async-signal-safe.
std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_cancel_signal(int) {
  if (!g_cancel.exchange(true)) {
    static const char kMessage[] = "\ntilescope: cancelling...\n";
    ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    (void)ignored;
  }
}

}  // namespace

CancelOnSignal::CancelOnSignal() {
  g_cancel.store(false);
  struct sigaction sa {};
  sa.sa_handler = on_cancel_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

CancelOnSignal::~CancelOnSignal() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

const std::atomic<bool>* CancelOnSignal::flag() const { return &g_cancel; }
bool CancelOnSignal::requested() const { return g_cancel.load(); }

}  // namespace ts::cli
