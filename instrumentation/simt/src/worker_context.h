// Per-OS-thread state of the SIMT runtime: which block the worker is running (the fiber entry
// point and the kernel hooks find it here) and the records threadIdx/blockIdx read outside a
// launch.
#pragma once

#include "instrumentation/simt/kernel_api/runtime_hooks.h"
#include "instrumentation/simt/kernel_api/source_place.h"

namespace simt::detail {

class BlockRun;

inline constexpr ThreadCoordinates kOutsideThread{};
inline constexpr BlockCoordinates kOutsideBlock{};

extern constinit thread_local BlockRun* active_block_run;
extern constinit thread_local unsigned active_worker_index;

// A CUDA device function called from host code (not inside a launch) has no block to act on.
[[noreturn]] void throw_outside_launch(const char* what, const SourcePlace& where);

inline BlockRun& block_of_caller(const char* what, const SourcePlace& where) {
  if (active_block_run == nullptr) [[unlikely]]
    throw_outside_launch(what, where);
  return *active_block_run;
}

}  // namespace simt::detail
