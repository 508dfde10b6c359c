// The first include of every kernel source (`*.cuh`): one CUDA C++ source, two executors.
//
//  * Under nvcc (__CUDACC__ defined) this is CUDA itself: <cuda_runtime.h>, <cuda_fp16.h> and
//    <cuda_bf16.h>, and nothing of the SIMT runtime.
//  * Under the host compiler it defines TILESCOPE_SIMT_CPU and supplies what a kernel sees on a
//    GPU, implemented by the CPU SIMT runtime (one fiber per CUDA thread): the qualifiers,
//    threadIdx/blockIdx/blockDim/gridDim, barriers, warp shuffles/votes, atomics, the math
//    intrinsics, and the __half/__nv_bfloat16 functions CUDA's headers leave device-only.
//
// Both: TS_DYNAMIC_SHARED(type, name) declares `type* name` pointing at the block's dynamic
// shared memory (16-byte aligned; on the CPU poisoned with 0xFF bytes at each block start, so a
// read of an element nobody wrote is NaN).
#pragma once

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// One untyped extern array reinterpreted: nvcc rejects `extern __shared__` arrays of different
// types with the same name, and kernels want float, __half... views of the same bytes.
#define TS_DYNAMIC_SHARED(type, name)                                     \
  extern __shared__ __align__(16) unsigned char ts_dynamic_shared_raw_[]; \
  type* name = reinterpret_cast<type*>(ts_dynamic_shared_raw_)

#else  // the host compiler: the CPU SIMT runtime

#define TILESCOPE_SIMT_CPU 1

#include "instrumentation/simt/kernel_api/atomics.h"
#include "instrumentation/simt/kernel_api/block_sync.h"
#include "instrumentation/simt/kernel_api/half_intrinsics.h"
#include "instrumentation/simt/kernel_api/host_headers.h"
#include "instrumentation/simt/kernel_api/math_intrinsics.h"
#include "instrumentation/simt/kernel_api/qualifiers.h"
#include "instrumentation/simt/kernel_api/thread_index.h"
#include "instrumentation/simt/kernel_api/warp_ops.h"
#include "instrumentation/simt/runtime.h"

#define TS_DYNAMIC_SHARED(type, name) \
  type* name = reinterpret_cast<type*>(::simt::detail::dynamic_shared_memory())

#endif
