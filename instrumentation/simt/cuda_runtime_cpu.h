// The subset of the CUDA runtime API that a kernel's host code uses, for the CPU path: the same
// calls, types and error codes as <cuda_runtime.h>, run by the SIMT runtime. A user's host code
// reaches it through the shim headers (cuda_shim/cuda_runtime.h, which `tilescope::simt` puts on
// the include path ahead of CUDA's), so `cudaMalloc`, `cudaMemcpyAsync`, `cudaMemcpyToSymbol`,
// streams and events compile unchanged; kernel launches use TILESCOPE_LAUNCH (tilescope/
// portable.h), which is `<<<...>>>` under nvcc.
//
// The C API is CUDA's own: its declarations (cuda_runtime_api.h, host-compilable, with their
// types, error codes and default arguments) are what a program compiles against, and
// src/cuda_runtime_cpu.cpp defines those functions (libtilescope_cuda_cpu, which a program on the
// CPU path links instead of cudart). This header adds the C++ forms <cuda_runtime.h> has
// (cudaMalloc(T**), symbol copies taking the variable, a typed cudaLaunchKernel) and the launch
// support TILESCOPE_LAUNCH uses.
//
// Semantics on the CPU, where they differ from a GPU's:
//  * Memory: cudaMalloc returns host memory (256-byte aligned) filled with 0xFF bytes (NaN as
//    float, fp16 and bf16): a kernel that reads what nobody wrote sees NaN, not a lucky zero.
//    Every copy kind, cudaMemcpyDefault included, is a memcpy; cudaFree of a pointer that
//    cudaMalloc did not return is cudaErrorInvalidValue.
//  * Ordering: every call runs to completion before it returns, on the calling thread, so any
//    use of streams is trivially ordered. Streams and events are real handles; an event records
//    the steady clock, so cudaEventElapsedTime times the work between two records.
//  * Launches run the kernel on the SIMT runtime before returning. A bad configuration (a zero
//    or too large dimension, more than 48 KiB of dynamic shared memory without
//    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ...)) is
//    cudaErrorInvalidConfiguration / cudaErrorInvalidValue at once, as on a GPU. A kernel that
//    fails while running (a deadlock, __trap, a divergent barrier...) is cudaErrorLaunchFailure,
//    returned by the next synchronising call and cudaGetLastError as a GPU's asynchronous error
//    would be; cudaGetErrorString of it names the block, thread and the kernel's file:line.
//    Errors are not sticky: after cudaGetLastError the runtime is usable again.
//  * Launch settings from the environment: TILESCOPE_CPU_WORKERS (OS threads running blocks;
//    1 = deterministic order) and TILESCOPE_CPU_PERTURB_SEED (shuffle the thread schedule,
//    runtime.h: a missing barrier shows as results that change with the seed).
//  * The device: one, "tilescope CPU SIMT runtime", compute capability 9.0 with an H100's limits
//    (48 KiB static, 227 KiB opt-in dynamic shared memory, 132 multiprocessors, 1024 threads a
//    block) so that host code sizing grids from cudaGetDeviceProperties makes the same choices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>
#include <driver_types.h>
#include <vector_types.h>

#include "instrumentation/simt/runtime.h"

// ---- memory ------------------------------------------------------------------------------------
template <typename T>
cudaError_t cudaMalloc(T** ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
template <typename T>
cudaError_t cudaMallocHost(T** ptr, size_t bytes) {
  return cudaMallocHost(reinterpret_cast<void**>(ptr), bytes);
}

namespace simt::cuda_runtime {
// Records `code` as the calling thread's last error, with a detail cudaGetErrorString appends.
cudaError_t record_error(cudaError_t code, const std::string& detail);
// Whether a copy of `count` bytes at `offset` fits a symbol of `symbol_bytes` (recorded if not).
cudaError_t check_symbol_range(size_t count, size_t offset, size_t symbol_bytes, const char* call);
}  // namespace simt::cuda_runtime

// A `__device__` or `__constant__` variable is a plain global on the CPU: the copies read and
// write it directly, checked against its size (which the C forms cannot know).
template <typename T>
cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t count, size_t offset = 0,
                               cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  if (const cudaError_t e = simt::cuda_runtime::check_symbol_range(count, offset, sizeof(T), "cudaMemcpyToSymbol");
      e != cudaSuccess)
    return e;
  return cudaMemcpyToSymbol(static_cast<const void*>(&symbol), src, count, offset, kind);
}
template <typename T>
cudaError_t cudaMemcpyToSymbolAsync(const T& symbol, const void* src, size_t count,
                                    size_t offset = 0,
                                    cudaMemcpyKind kind = cudaMemcpyHostToDevice,
                                    cudaStream_t stream = nullptr) {
  (void)stream;
  return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}
template <typename T>
cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t count, size_t offset = 0,
                                 cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  if (const cudaError_t e = simt::cuda_runtime::check_symbol_range(count, offset, sizeof(T), "cudaMemcpyFromSymbol");
      e != cudaSuccess)
    return e;
  return cudaMemcpyFromSymbol(dst, static_cast<const void*>(&symbol), count, offset, kind);
}
template <typename T>
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const T& symbol, size_t count,
                                      size_t offset = 0,
                                      cudaMemcpyKind kind = cudaMemcpyDeviceToHost,
                                      cudaStream_t stream = nullptr) {
  (void)stream;
  return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}
template <typename T>
cudaError_t cudaGetSymbolAddress(void** address, const T& symbol) {
  return cudaGetSymbolAddress(address, static_cast<const void*>(&symbol));
}

template <typename T>
cudaError_t cudaMallocHost(T** ptr, size_t bytes, unsigned flags) {
  return cudaHostAlloc(reinterpret_cast<void**>(ptr), bytes, flags);
}
inline cudaError_t cudaEventCreate(cudaEvent_t* event, unsigned flags) {
  return cudaEventCreateWithFlags(event, flags);
}

// ---- kernels -----------------------------------------------------------------------------------
// cudaFuncAttributeMaxDynamicSharedMemorySize (up to 227 KiB) is remembered per kernel and
// checked at its launches; the other attributes are accepted and have no effect on the CPU.
template <typename... Params>
cudaError_t cudaFuncSetAttribute(void (*kernel)(Params...), cudaFuncAttribute attribute,
                                 int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attribute, value);
}

namespace simt::cuda_runtime {

// The launch settings of the CPU path (TILESCOPE_CPU_WORKERS, TILESCOPE_CPU_PERTURB_SEED, read
// once), which a program may also set itself before its launches.
LaunchOptions& launch_options();

// Before a launch: the configuration checks a GPU makes (dimensions, dynamic shared memory
// against the kernel's opt-in). cudaSuccess, or the error recorded as the last error.
cudaError_t check_launch(const void* kernel, const LaunchConfig& config);
// After it: the result recorded (a failure as a pending cudaErrorLaunchFailure with its
// message).
cudaError_t finish_launch(const LaunchResult& result);

template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                   cudaStream_t stream, Args&&... args) {
  (void)stream;  // every launch runs to completion in call order
  const LaunchConfig config{grid, block, dynamic_shared_bytes};
  if (const cudaError_t e = check_launch(reinterpret_cast<const void*>(kernel), config);
      e != cudaSuccess)
    return e;
  return finish_launch(simt::launch(config, launch_options(), kernel, std::forward<Args>(args)...));
}

// TILESCOPE_LAUNCH's CPU form: the configuration now, the arguments in the call that follows,
// as in `kernel<<<grid, block, smem, stream>>>(args...)`.
template <typename... Params>
struct BoundLaunch {
  void (*kernel)(Params...);
  dim3 grid, block;
  size_t dynamic_shared_bytes;
  cudaStream_t stream;

  template <typename... Args>
  void operator()(Args&&... args) const {
    static_assert(sizeof...(Args) == sizeof...(Params),
                  "TILESCOPE_LAUNCH: the number of arguments differs from the kernel's parameters");
    launch(kernel, grid, block, dynamic_shared_bytes, stream, std::forward<Args>(args)...);
  }
};

template <typename... Params>
BoundLaunch<Params...> bind_launch(void (*kernel)(Params...), dim3 grid, dim3 block,
                                   size_t dynamic_shared_bytes = 0,
                                   cudaStream_t stream = nullptr) {
  return {kernel, grid, block, dynamic_shared_bytes, stream};
}

template <typename... Params, size_t... I>
cudaError_t launch_from_pointers(void (*kernel)(Params...), dim3 grid, dim3 block, void** args,
                                 size_t dynamic_shared_bytes, std::index_sequence<I...>) {
  return launch(kernel, grid, block, dynamic_shared_bytes, nullptr,
                *static_cast<std::remove_cvref_t<Params>*>(args[I])...);
}

}  // namespace simt::cuda_runtime

// cudaLaunchKernel with the kernel's own type (CUDA's template form): args[i] points at the i-th
// argument. The C form, taking the kernel as a `const void*`, cannot call it on the CPU (its type
// is needed): it returns cudaErrorInvalidDeviceFunction saying to pass the kernel itself.
template <typename... Params>
cudaError_t cudaLaunchKernel(void (*kernel)(Params...), dim3 grid, dim3 block, void** args,
                             size_t dynamic_shared_bytes = 0, cudaStream_t stream = nullptr) {
  (void)stream;
  if (kernel == nullptr || (sizeof...(Params) > 0 && args == nullptr))
    return simt::cuda_runtime::record_error(cudaErrorInvalidValue, "cudaLaunchKernel of a null kernel or argument array");
  return simt::cuda_runtime::launch_from_pointers(kernel, grid, block, args, dynamic_shared_bytes,
                                                  std::index_sequence_for<Params...>{});
}
