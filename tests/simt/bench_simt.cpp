// Google Benchmark of the CPU SIMT runtime's costs (design target: <= 20 ns each):
//   * per thread per __syncthreads (a kernel looping over barriers),
//   * per lane per warp shuffle (a kernel looping over __shfl_xor_sync),
//   * per thread of an empty kernel (fiber start and finish, block set-up).
// Each counter is in seconds of CPU time per operation (printed with an SI prefix: "12.3n" =
// 12.3 ns), over all worker threads (process CPU time): on a shared machine wall time also
// counts other processes' time slices. With --benchmark_repetitions=N the "min" row is the
// least disturbed run. Figures and the command are in docs/perf.md ("CPU SIMT runtime").
//
//   build/release/tests/simt/bench_simt --benchmark_counters_tabular=true
//       --benchmark_repetitions=10 --benchmark_report_aggregates_only=true   (one line)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "instrumentation/simt/cuda_compat.h"

namespace {

constexpr int kIterations = 64;

__global__ void barrier_loop_kernel(int iterations) {
  for (int i = 0; i < iterations; ++i) __syncthreads();
}

__global__ void shuffle_loop_kernel(float* sink, int iterations) {
  float v = static_cast<float>(threadIdx.x);
  for (int i = 0; i < iterations; ++i) v += __shfl_xor_sync(0xffffffffu, v, 1 + i % 16);
  if (v == -1.0f) *sink = v;  // keeps the loop; never true
}

__global__ void empty_kernel(int) {}

void run_or_skip(benchmark::State& state, const simt::LaunchResult& result) {
  if (!result.ok()) state.SkipWithError(result.message.c_str());
}

simt::LaunchOptions with_workers(benchmark::State& state) {
  simt::LaunchOptions options;
  options.workers = static_cast<int>(state.range(1));
  return options;
}

void per_operation(benchmark::State& state, const char* name, double operations_per_launch) {
  state.counters[name] =
      benchmark::Counter(operations_per_launch, benchmark::Counter::kIsIterationInvariantRate |
                                                    benchmark::Counter::kInvert);
}

void BM_Barrier(benchmark::State& state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  const unsigned blocks = 16;
  const simt::LaunchOptions options = with_workers(state);
  for (auto _ : state) {
    run_or_skip(state, simt::launch({dim3(blocks), dim3(threads)}, options, barrier_loop_kernel,
                                    kIterations));
  }
  per_operation(state, "per_thread_barrier", double(blocks) * threads * kIterations);
}

void BM_Shuffle(benchmark::State& state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  const unsigned blocks = 16;
  const simt::LaunchOptions options = with_workers(state);
  float sink = 0.0f;
  for (auto _ : state) {
    run_or_skip(state, simt::launch({dim3(blocks), dim3(threads)}, options, shuffle_loop_kernel,
                                    &sink, kIterations));
  }
  per_operation(state, "per_lane_shuffle", double(blocks) * threads * kIterations);
}

void BM_EmptyKernel(benchmark::State& state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  const unsigned blocks = 256;
  const simt::LaunchOptions options = with_workers(state);
  for (auto _ : state) {
    run_or_skip(state, simt::launch({dim3(blocks), dim3(threads)}, options, empty_kernel, 0));
  }
  per_operation(state, "per_thread", double(blocks) * threads);
}

// Arguments: threads per block, workers.
void block_sizes(benchmark::internal::Benchmark* b) {
  for (int workers : {1, 2}) {
    for (int threads : {32, 128, 256, 1024}) b->Args({threads, workers});
  }
  b->ArgNames({"threads", "workers"})->MeasureProcessCPUTime();
  b->ComputeStatistics(
      "min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

BENCHMARK(BM_Barrier)->Apply(block_sizes);
BENCHMARK(BM_Shuffle)->Apply(block_sizes);
BENCHMARK(BM_EmptyKernel)->Apply(block_sizes);

}  // namespace

BENCHMARK_MAIN();
