// Google Benchmark of the CPU SIMT runtime's costs (target, docs/perf.md: <= 20 ns each):
//   * per thread per __syncthreads (a kernel looping over barriers),
//   * per lane per warp shuffle (a kernel looping over __shfl_xor_sync),
//   * per thread of an empty kernel (fiber start and finish, block set-up),
//   * per warp per tensor-core operation (tensor_core.h, wmma.h): mma.m16n8k16, ldmatrix.x4,
//     wmma::mma_sync m16n16k16 (each a warp collective plus its arithmetic), and per thread
//     per 16-byte cp.async with its wait.
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
#include "instrumentation/simt/tensor_core.h"
#include "instrumentation/simt/wmma.h"

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

// fp16 ones: each mma adds 16 to every accumulator (exact for the iterations run here).
__global__ void mma_loop_kernel(float* sink, int iterations) {
  const uint32_t a[4] = {0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
  const uint32_t b[2] = {0x3c003c00u, 0x3c003c00u};
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = 0; i < iterations; ++i) ts::tc::mma_m16n8k16_f16(d, a, b, d);
  if (d[0] == -1.0f) *sink = d[0];  // keeps the loop; never true
}

__global__ void ldmatrix_loop_kernel(float* sink, int iterations) {
  TS_DYNAMIC_SHARED(uint16_t, tile);  // 32 rows of 8 per warp, never written: poison bits
  const uint16_t* row = tile + 8 * threadIdx.x;
  uint32_t sum = 0;
  for (int i = 0; i < iterations; ++i) {
    uint32_t r[4];
    ts::tc::ldmatrix(r, row);
    sum += r[0] ^ r[3];
  }
  if (sum == 1u) *sink = 1.0f;
}

__global__ void wmma_loop_kernel(float* sink, const __half* matrices, int iterations) {
  namespace wmma = nvcuda::wmma;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(a, matrices, 16);
  wmma::load_matrix_sync(b, matrices, 16);
  wmma::fill_fragment(acc, 0.0f);
  for (int i = 0; i < iterations; ++i) wmma::mma_sync(acc, a, b, acc);
  if (acc.x[0] == -1.0f) *sink = acc.x[0];
}

__global__ void cp_async_loop_kernel(const float* source, int iterations) {
  TS_DYNAMIC_SHARED(float, shared);
  for (int i = 0; i < iterations; ++i) {
    ts::tc::cp_async_cg(shared + 4 * threadIdx.x, source + 4 * threadIdx.x);
    ts::tc::cp_async_wait_all();
  }
}

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

// Tensor-core operations: 16 blocks; counters per warp (per thread for cp.async).
void BM_Mma(benchmark::State& state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  const unsigned blocks = 16;
  const simt::LaunchOptions options = with_workers(state);
  float sink = 0.0f;
  for (auto _ : state) {
    run_or_skip(state, simt::launch({dim3(blocks), dim3(threads)}, options, mma_loop_kernel, &sink,
                                    kIterations));
  }
  per_operation(state, "per_warp_mma", double(blocks) * threads / 32 * kIterations);
}

void BM_Ldmatrix(benchmark::State& state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  const unsigned blocks = 16;
  const simt::LaunchOptions options = with_workers(state);
  float sink = 0.0f;
  for (auto _ : state) {
    run_or_skip(state, simt::launch({dim3(blocks), dim3(threads), threads * 16}, options,
                                    ldmatrix_loop_kernel, &sink, kIterations));
  }
  per_operation(state, "per_warp_ldmatrix_x4", double(blocks) * threads / 32 * kIterations);
}

void BM_WmmaMma(benchmark::State& state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  const unsigned blocks = 16;
  const simt::LaunchOptions options = with_workers(state);
  struct alignas(32) Matrix {  // wmma loads need 256-bit alignment
    __half x[16 * 16];
  };
  Matrix ones;
  std::fill(std::begin(ones.x), std::end(ones.x), __float2half_rn(1.0f));
  float sink = 0.0f;
  for (auto _ : state) {
    run_or_skip(state, simt::launch({dim3(blocks), dim3(threads)}, options, wmma_loop_kernel,
                                    &sink, static_cast<const __half*>(ones.x), kIterations));
  }
  per_operation(state, "per_warp_wmma_mma", double(blocks) * threads / 32 * kIterations);
}

void BM_CpAsync(benchmark::State& state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  const unsigned blocks = 16;
  const simt::LaunchOptions options = with_workers(state);
  struct alignas(16) Chunk {  // what one thread copies
    float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  };
  const std::vector<Chunk> source(threads);
  for (auto _ : state) {
    run_or_skip(state, simt::launch({dim3(blocks), dim3(threads), threads * 16}, options,
                                    cp_async_loop_kernel,
                                    reinterpret_cast<const float*>(source.data()), kIterations));
  }
  per_operation(state, "per_thread_cp_async_and_wait", double(blocks) * threads * kIterations);
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
BENCHMARK(BM_Mma)->Apply(block_sizes);
BENCHMARK(BM_Ldmatrix)->Apply(block_sizes);
BENCHMARK(BM_WmmaMma)->Apply(block_sizes);
BENCHMARK(BM_CpAsync)->Apply(block_sizes);

}  // namespace

BENCHMARK_MAIN();
