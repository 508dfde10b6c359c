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

// jump_fcontext, entered by a jump with its return address pushed instead of by a call.
//
// Boost's jump_fcontext resumes the other context with an indirect jump, not a `ret`, so the
// `call` into it leaves an entry on the CPU's return-stack predictor that no `ret` consumes:
// every `ret` after a switch (out of the barrier, out of the hook into the kernel) is then
// predicted from the wrong entry and mispredicts, about 20 cycles each. Reaching jump_fcontext
// without a call pushes nothing on the predictor; the landing point then returns with `ret`,
// whose prediction is the call into this function from the same call site in the fiber that
// switched away, which is where the resumed fiber also returns to. Architecturally it is the
// same as calling jump_fcontext (same registers, same stack contents). Defined in
// fiber_switch.cpp (x86-64 only; elsewhere a plain call).
#if defined(__x86_64__)
extern "C" fctx::transfer_t ts_simt_jump_fcontext(fctx::fcontext_t to, void* data);
#else
inline fctx::transfer_t ts_simt_jump_fcontext(fctx::fcontext_t to, void* data) {
  return fctx::jump_fcontext(to, data);
}
#endif

struct Context {
  fctx::fcontext_t suspended = nullptr;  // where this context resumes
#if defined(TS_SIMT_ASAN)
  // Its stack and ASan's fake stack. Only ASan builds carry them: elsewhere a thread's record
  // fits one cache line.
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* asan_fake_stack = nullptr;
#endif
  void set_stack(const void* bottom, size_t size) {
#if defined(TS_SIMT_ASAN)
    stack_bottom = bottom;
    stack_size = size;
#else
    (void)bottom;
    (void)size;
#endif
  }
};

// The calling OS thread's own stack, for the Context that stands for it (under ASan, switching
// back to it must name its real bounds, or ASan loses track of the thread's stack).
void set_to_current_thread_stack(Context& context);

// Records where the context that just jumped to us stopped.
inline void note_arrival(fctx::transfer_t arrival) {
  static_cast<Context*>(arrival.data)->suspended = arrival.fctx;
}

// Leaves `from` for `to`; returns when something switches back to `from`.
inline void switch_context(Context& from, Context& to) {
#if defined(TS_SIMT_ASAN)
  asan_start_switch(&from.asan_fake_stack, to.stack_bottom, to.stack_size);
#endif
  const fctx::transfer_t arrival = ts_simt_jump_fcontext(to.suspended, &from);
#if defined(TS_SIMT_ASAN)
  asan_finish_switch(from.asan_fake_stack, nullptr, nullptr);
#endif
  note_arrival(arrival);
}

// Leaves `from` for good (a finished fiber): ASan may free its fake stack.
[[noreturn]] inline void leave_context(Context& from, Context& to) {
#if defined(TS_SIMT_ASAN)
  asan_start_switch(nullptr, to.stack_bottom, to.stack_size);
#endif
  ts_simt_jump_fcontext(to.suspended, &from);
  __builtin_unreachable();
}

}  // namespace simt::detail
