// CUDA's function and variable qualifiers for the host compiler.
//
// CUDA's host_defines.h (pulled in by cuda_fp16.h) already makes __global__, __device__,
// __host__ and __constant__ expand to nothing under a host compiler. What differs here:
//  * __shared__ is `thread_local`: a SIMT worker runs one block at a time, so one copy per
//    worker thread is one copy per running block. (Static shared memory is not poisoned
//    between blocks; use TS_DYNAMIC_SHARED for memory whose unwritten reads must show.)
//  * __forceinline__ is plain `inline`: always_inline can fail to inline and is an error then.
//  * __noinline__ and __launch_bounds__ are not defined by CUDA for host compilers.
#pragma once

#include "instrumentation/simt/kernel_api/host_headers.h"

#undef __shared__
#define __shared__ thread_local

#undef __forceinline__
#define __forceinline__ inline

#ifndef __noinline__
#define __noinline__ __attribute__((noinline))
#endif

#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

#ifndef __grid_constant__
#define __grid_constant__
#endif
