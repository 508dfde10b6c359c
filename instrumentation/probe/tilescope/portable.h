// The two things a kernel's source writes differently so that it also builds for tilescope's CPU
// path; under nvcc each is exactly the CUDA construct it replaces, at no cost.
//
// TILESCOPE_LAUNCH: a kernel launch statement.
//   TILESCOPE_LAUNCH(my_kernel, grid, block)(args...);                 // my_kernel<<<grid, block>>>
//   TILESCOPE_LAUNCH(my_kernel, grid, block, smem_bytes, stream)(args...);
//   TILESCOPE_LAUNCH((my_kernel<T, 64>), grid, block)(args...);        // a comma: parenthesise
// Under nvcc it is the `<<<...>>>` launch itself: errors go to cudaGetLastError. On the CPU path
// the same statement runs the kernel on the SIMT runtime and reports its errors the same way
// (instrumentation/simt/cuda_runtime_cpu.h says how).
//
// TILESCOPE_DYNAMIC_SHARED(type, name): `type* name` pointing at the block's dynamic shared
// memory (16-byte aligned), in place of `extern __shared__ type name[];`, which the host
// compiler cannot give a per-block meaning (tilescope_add_cpu_executable stops at such a line
// with this advice). On the CPU the memory is filled with 0xFF bytes at each block start, so a
// read of an element nobody wrote is NaN.
//
// Part of the installed SDK.
#pragma once

#if !defined(__CUDACC__)
#include <cuda_runtime.h>  // on the CPU path tilescope's own, which defines TILESCOPE_SIMT_CPU
#endif

#if defined(__CUDACC__)

#define TILESCOPE_LAUNCH(kernel, ...) kernel<<<__VA_ARGS__>>>
// One untyped array for every use: nvcc rejects `extern __shared__` arrays of one name with
// different types.
#define TILESCOPE_DYNAMIC_SHARED(type, name)                                       \
  extern __shared__ __align__(16) unsigned char tilescope_dynamic_shared_raw_[]; \
  type* name = reinterpret_cast<type*>(tilescope_dynamic_shared_raw_)

#elif defined(TILESCOPE_SIMT_CPU)

#define TILESCOPE_LAUNCH(kernel, ...) ::simt::cuda_runtime::bind_launch(kernel, __VA_ARGS__)
#define TILESCOPE_DYNAMIC_SHARED(type, name) \
  type* name = reinterpret_cast<type*>(::simt::detail::dynamic_shared_memory())

#else
// A host-compiled file of a GPU build: kernels belong in a .cu file that nvcc compiles.
#define TILESCOPE_LAUNCH(kernel, ...)                                                          \
  static_assert(false,                                                                         \
                "TILESCOPE_LAUNCH: launch kernels from a .cu file compiled by nvcc, or build " \
                "this file for the CPU path (tilescope_add_cpu_executable)");
#endif
