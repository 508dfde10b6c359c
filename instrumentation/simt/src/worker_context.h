// Per-OS-thread state of the SIMT runtime: which block the worker is running (the fiber entry
// point and the kernel hooks find it here) and the records threadIdx/blockIdx read outside a
// launch.
#pragma once

#include "instrumentation/simt/kernel_api/runtime_hooks.h"

namespace simt::detail {

class BlockRun;

inline constexpr ThreadCoordinates kOutsideThread{};
inline constexpr BlockCoordinates kOutsideBlock{};

extern constinit thread_local BlockRun* active_block_run;
extern constinit thread_local unsigned active_worker_index;

}  // namespace simt::detail
