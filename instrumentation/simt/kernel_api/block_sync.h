// Block-wide barriers for the host build of a kernel.
//
// Each takes the caller's source location (a default argument), so that a barrier reached
// from two places, a deadlock, or a barrier that an exited thread can never reach is reported
// with the kernel's own file:line.
#pragma once

#include <atomic>
#include "instrumentation/simt/kernel_api/source_place.h"

#include "instrumentation/simt/kernel_api/runtime_hooks.h"

inline void __syncthreads(TS_SIMT_CALLER_PLACE) { ::simt::detail::block_sync(where); }
inline int __syncthreads_count(int predicate, TS_SIMT_CALLER_PLACE) {
  return ::simt::detail::block_barrier(::simt::detail::BarrierOp::count, predicate, where);
}
inline int __syncthreads_and(int predicate, TS_SIMT_CALLER_PLACE) {
  return ::simt::detail::block_barrier(::simt::detail::BarrierOp::all, predicate, where);
}
inline int __syncthreads_or(int predicate, TS_SIMT_CALLER_PLACE) {
  return ::simt::detail::block_barrier(::simt::detail::BarrierOp::any, predicate, where);
}

// Memory fences: one block runs on one OS thread, so a block-scope fence only has to stop the
// compiler; device and system scope order memory between worker threads.
inline void __threadfence_block() { std::atomic_signal_fence(std::memory_order_seq_cst); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// Ends the launch with a failure naming the calling thread and place.
[[noreturn]] inline void __trap(TS_SIMT_CALLER_PLACE) {
  ::simt::detail::kernel_abort("__trap() called", where);
}
[[noreturn]] inline void __brkpt(TS_SIMT_CALLER_PLACE) {
  ::simt::detail::kernel_abort("__brkpt() called", where);
}
inline void __nanosleep(unsigned) {}
