// The kernels on the CPU backend (the SIMT runtime running the CUDA source): FA-1 forward, one
// head, S = 1024, D = 64, fp32 — docs/perf.md's CPU target — on 1 worker and on every core, and
// a Split-K decode step for scale. Inputs are made once; each iteration is one launch_attention
// (output buffers allocated and poisoned, kernels run; no trace).
//
//   build/<preset>/tests/kernels/bench_kernels_cpu [--benchmark_filter=Fa1]
#include <benchmark/benchmark.h>

#include <thread>

#include "kernels/launcher.h"
#include "base/random_inputs.h"

namespace ts {
namespace {

void run(benchmark::State& state, const AttentionConfig& c, int workers) {
  const AttentionInputs in = make_random_inputs(c, {.seed = 1});
  LaunchRequest req;
  req.config = c;
  req.backend = Backend::cpu;
  req.cpu_workers = workers;
  double kernel_ms = 0;
  for (auto _ : state) {
    const LaunchOutcome out = launch_attention(req, in);
    kernel_ms += out.elapsed_ms;
    benchmark::DoNotOptimize(out.o.bytes.data());
  }
  const double causal_factor = c.causal ? 0.5 : 1.0;
  const double flops = 4.0 * double(c.batch * c.heads * c.seq_q * c.seq_kv * c.head_dim) * causal_factor;
  state.counters["kernel_ms"] = kernel_ms / double(state.iterations());
  state.counters["GFLOP"] = benchmark::Counter(flops * double(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.counters["workers"] = workers;
}

void BM_Fa1_S1024_D64_fp32(benchmark::State& state) {
  AttentionConfig c;
  c.kernel = KernelKind::fa1;
  c.seq_q = c.seq_kv = 1024;
  c.head_dim = 64;
  c.dtype = DType::f32;
  run(state, c, static_cast<int>(state.range(0)));
}

void BM_SplitkDecode_H8_S8192_D128_bf16(benchmark::State& state) {
  AttentionConfig c;
  c.kernel = KernelKind::splitk;
  c.heads = 8;
  c.seq_q = 1;
  c.seq_kv = 8192;
  c.head_dim = 128;
  c.dtype = DType::bf16;
  run(state, c, static_cast<int>(state.range(0)));
}

const int kAllCores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
BENCHMARK(BM_Fa1_S1024_D64_fp32)->Arg(1)->Arg(kAllCores)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SplitkDecode_H8_S8192_D128_bf16)->Arg(kAllCores)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace ts

BENCHMARK_MAIN();
