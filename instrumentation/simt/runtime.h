// The CPU SIMT runtime's host API: launch a CUDA kernel (compiled by the host compiler from
// the same `.cuh` source nvcc builds) on the CPU, one fiber per CUDA thread.
//
//   simt::LaunchResult r = simt::launch({grid, block, smem_bytes}, {.workers = 1}, my_kernel,
//                                       in_ptr, out_ptr, n);          // like <<<g, b, smem>>>
//   if (!r.ok()) report(r.message);   // names block, thread and the kernel's file:line
//
// Blocks are taken from an atomic counter by `workers` OS threads (the calling thread is
// worker 0), one block at a time per worker; the threads of a block are fibers switched at
// barriers and warp operations. workers = 1 runs blocks in order on the calling thread, and
// the threads of a block in a fixed order: the same inputs give bit-identical results.
// Concurrent launches from different host threads are independent and safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <vector_types.h>

namespace simt {

struct LaunchConfig {
  dim3 grid;
  dim3 block;
  size_t dynamic_shared_bytes = 0;
};

struct LaunchOptions {
  // OS worker threads: 0 = std::thread::hardware_concurrency() (at most 16384 / threads per
  // block: each thread of a running block holds a fiber stack); 1 = deterministic.
  int workers = 0;
  // With a seed, the threads of a block resume in a seeded random order at the start and after
  // every barrier and warp exchange: a missing barrier shows as a result that changes with it.
  std::optional<uint64_t> perturb_seed = std::nullopt;
  // Blocks finished of total. Called from worker threads, never two calls at once, at most
  // about every 20 ms, and once at the end of a launch that completed.
  std::function<void(uint64_t blocks_done, uint64_t blocks_total)> progress = nullptr;
  // Checked before every block and at every block-wide barrier; the launch then ends with
  // Status::cancelled.
  const std::atomic<bool>* cancel = nullptr;
  // Stack of each fiber: 0 = a default (64 KiB; 256 KiB under AddressSanitizer).
  size_t stack_bytes = 0;
};

struct LaunchResult {
  enum class Status { ok, cancelled, failed };
  Status status = Status::ok;
  // Empty when ok; otherwise what went wrong, naming block, thread and source location.
  std::string message;
  bool ok() const { return status == Status::ok; }
};

// Largest dynamic shared memory a launch accepts: the opt-in maximum of an H100 (227 KiB).
inline constexpr size_t kMaxDynamicSharedBytes = 227 * 1024;
inline constexpr unsigned kMaxThreadsPerBlock = 1024;
// The multiprocessors the CPU path reports (an H100's), so that host code sizing its grid by the
// SM count (Split-K heuristics) plans what it would on a GPU.
inline constexpr int kNominalMultiprocessors = 132;

// Index of the calling SIMT worker (0 outside a launch).
unsigned worker_index();
// A steady clock in nanoseconds (what probes record as the time of an event on the CPU).
uint64_t clock_ns();

namespace detail {

// A kernel with its arguments, type-erased so the scheduler is compiled once.
struct KernelInvocation {
  void (*run)(const void* state);  // calls the kernel with copies of the arguments
  const void* state;
};

LaunchResult launch_erased(const LaunchConfig& config, const LaunchOptions& options,
                           const KernelInvocation& kernel);

template <typename Kernel, typename Arguments>
struct BoundKernel {
  Kernel kernel;
  Arguments arguments;
  static void run(const void* state) {
    const auto* self = static_cast<const BoundKernel*>(state);
    // The kernel's parameters are by value: every CUDA thread gets its own copy, as each GPU
    // thread reads its own from the parameter bank and may modify it.
    std::apply([self](const auto&... args) { self->kernel(args...); }, self->arguments);
  }
};

}  // namespace detail

// Runs `kernel(args...)` over the grid, like kernel<<<grid, block, dynamic_shared_bytes>>>.
// Arguments are converted to the kernel's parameter types once and copied for every thread.
// Invalid configurations (a zero dimension, more than 1024 threads a block, too much dynamic
// shared memory...) return Status::failed with a message; nothing runs.
template <typename... Params, typename... Args>
LaunchResult launch(const LaunchConfig& config, const LaunchOptions& options,
                    void (*kernel)(Params...), Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "simt::launch: the number of arguments differs from the kernel's parameters");
  if (kernel == nullptr) {
    return LaunchResult{LaunchResult::Status::failed,
                        "invalid launch: the kernel is a null pointer"};
  }
  using Arguments = std::tuple<std::remove_cvref_t<Params>...>;
  const detail::BoundKernel<void (*)(Params...), Arguments> bound{
      kernel, Arguments(std::forward<Args>(args)...)};
  return detail::launch_erased(config, options, {&decltype(bound)::run, &bound});
}

}  // namespace simt
