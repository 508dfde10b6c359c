// A place execution can be switched to (a fiber, or a worker's own stack) and the switch.
//
// Built on Boost.Context's fcontext (jump_fcontext: a few nanoseconds, registers saved on the
// stack being left). Every jump passes the Context being left as its data, so the side that
// resumes stores where the leaver stopped: the switch is direct fiber to fiber, never through
// a scheduler round trip.
#pragma once

#include <boost/context/detail/fcontext.hpp>

#include <cstddef>

#include "instrumentation/simt/src/sanitizer.h"

namespace simt::detail {

namespace fctx = boost::context::detail;

struct Context {
  fctx::fcontext_t suspended = nullptr;  // where this context resumes
  const void* stack_bottom = nullptr;    // its stack, for AddressSanitizer
  size_t stack_size = 0;
  void* asan_fake_stack = nullptr;
};

// Records where the context that just jumped to us stopped.
inline void note_arrival(fctx::transfer_t arrival) {
  static_cast<Context*>(arrival.data)->suspended = arrival.fctx;
}

// Leaves `from` for `to`; returns when something switches back to `from`.
inline void switch_context(Context& from, Context& to) {
  asan_start_switch(&from.asan_fake_stack, to.stack_bottom, to.stack_size);
  const fctx::transfer_t arrival = fctx::jump_fcontext(to.suspended, &from);
  asan_finish_switch(from.asan_fake_stack, nullptr, nullptr);
  note_arrival(arrival);
}

// Leaves `from` for good (a finished fiber): ASan may free its fake stack.
[[noreturn]] inline void leave_context(Context& from, Context& to) {
  asan_start_switch(nullptr, to.stack_bottom, to.stack_size);
  fctx::jump_fcontext(to.suspended, &from);
  __builtin_unreachable();
}

}  // namespace simt::detail
