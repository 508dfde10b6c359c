// threadIdx, blockIdx, blockDim, gridDim and warpSize for the host build of a kernel.
// They are macros reading the running fiber (thread) and the worker's block, like the
// read-only special registers they stand for: `threadIdx.x = 1` does not compile.
#pragma once

#include "instrumentation/simt/kernel_api/runtime_hooks.h"

#define threadIdx (static_cast<const uint3&>(::simt::detail::current_thread->thread_idx))
#define blockIdx (static_cast<const uint3&>(::simt::detail::current_block->block_idx))
#define blockDim (static_cast<const dim3&>(::simt::detail::current_block->block_dim))
#define gridDim (static_cast<const dim3&>(::simt::detail::current_block->grid_dim))

inline constexpr int warpSize = 32;
