// The float64 reference and the naive baselines on the row block sets the analysis computes for
// large traces (docs/perf.md, "Reference"): one (batch, head), S = TS_BENCH_SEQ (default 8192)
// queries and keys, head dim 128, fp16, on 2 threads (the analysis's parallelism on the CI
// machine):
//   SplitK: row blocks of 8 rows, boundaries at the 8 split ends; each block's 8 partial
//           states, its 8 reduce prefixes and its output (a full Split-K trace, 8 splits);
//   SplitKTogether: the same row blocks, computed 8 at a time by compute_row_blocks (as the
//           analysis computes them on the CPU: RunReference::for_each_block);
//   FA1:    row blocks of 64 rows, boundaries every 64 keys; every prefix and the output (a
//           full FA-1 trace);
//   NaiveSplitK: the tolerance's baselines of the SplitK row blocks (naive_row_block_errors);
//   Prepare: the inputs' conversion (ReferenceInputs), once per run.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "app/model/analysis/naive_baseline.h"
#include "kernels/reference.h"
#include "tests/kernels/random_head_inputs.h"

namespace ts {
namespace {

int64_t bench_seq() {
  const char* s = std::getenv("TS_BENCH_SEQ");
  return s ? std::atoll(s) : 8192;
}

AttentionSpec bench_spec() {
  AttentionSpec s;
  s.seq_q = s.seq_kv = bench_seq();
  s.head_dim = 128;
  s.dtype = DType::f16;
  return s;
}

const HeadInputs& bench_inputs() {
  static const HeadInputs in = test::random_head_inputs(bench_spec(), 1);
  return in;
}

const ReferenceInputs& prepared() {
  static const ReferenceInputs p(bench_spec(), bench_inputs(), 2);
  return p;
}

// body(i) for i in [0, n) on two threads.
template <typename Body>
void on_two_threads(int64_t n, Body body) {
  std::atomic<int64_t> next{0};
  auto run = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) body(i);
  };
  std::thread helper(run);
  run();
  helper.join();
}

std::vector<int64_t> every(int64_t step, int64_t end) {
  std::vector<int64_t> b;
  for (int64_t x = step; x < end; x += step) b.push_back(x);
  return b;
}

// What the analysis reads of a Split-K row block: its 8 partial states, its 8 reduce prefixes and
// its output.
void read_split_states(const RowBlockReference& ref, int64_t split) {
  for (int64_t k = 0; k < 8; ++k) {
    const KeyRange partial{static_cast<int32_t>(k * split), static_cast<int32_t>((k + 1) * split)};
    const KeyRange prefix{0, static_cast<int32_t>((k + 1) * split)};
    benchmark::DoNotOptimize(ref.state({&partial, 1}).l[0]);
    benchmark::DoNotOptimize(ref.state({&prefix, 1}).l[0]);
  }
  benchmark::DoNotOptimize(ref.output().m[0]);
}

void BM_Prepare(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ReferenceInputs(bench_spec(), bench_inputs(), 2).bytes());
}

void BM_SplitK(benchmark::State& state) {
  const AttentionSpec s = bench_spec();
  const ReferenceInputs& in = prepared();
  const int64_t split = s.seq_kv / 8;
  const std::vector<int64_t> bounds = every(split, s.seq_kv);
  for (auto _ : state) {
    on_two_threads(s.seq_q / 8, [&](int64_t i) {
      const auto ref = compute_row_block(in, {0, 0, static_cast<int32_t>(i * 8), 8}, bounds);
      read_split_states(*ref, split);
    });
  }
}

void BM_SplitKTogether(benchmark::State& state) {
  const AttentionSpec s = bench_spec();
  const ReferenceInputs& in = prepared();
  const int64_t split = s.seq_kv / 8;
  const std::vector<int64_t> bounds = every(split, s.seq_kv);
  for (auto _ : state) {
    on_two_threads(s.seq_q / 64, [&](int64_t i) {
      std::vector<RowBlock> blocks;
      for (int32_t k = 0; k < 8; ++k) blocks.push_back({0, 0, static_cast<int32_t>(i * 64 + k * 8), 8});
      for (const auto& ref : compute_row_blocks(in, blocks, bounds)) {
        read_split_states(*ref, split);
      }
    });
  }
}

void BM_FA1(benchmark::State& state) {
  const AttentionSpec s = bench_spec();
  const ReferenceInputs& in = prepared();
  const std::vector<int64_t> bounds = every(64, s.seq_kv);
  for (auto _ : state) {
    on_two_threads(s.seq_q / 64, [&](int64_t i) {
      const auto ref = compute_row_block(in, {0, 0, static_cast<int32_t>(i * 64), 64}, bounds);
      for (int64_t e = 64; e <= s.seq_kv; e += 64) {
        const KeyRange prefix{0, static_cast<int32_t>(e)};
        benchmark::DoNotOptimize(ref->state({&prefix, 1}).l[0]);
      }
      benchmark::DoNotOptimize(ref->output().m[0]);
    });
  }
}

void BM_NaiveSplitK(benchmark::State& state) {
  const AttentionSpec s = bench_spec();
  const ReferenceInputs& in = prepared();
  const std::vector<PairFloats> floats = pair_floats(s, bench_inputs());
  const std::vector<int64_t> bounds = every(s.seq_kv / 8, s.seq_kv);
  // The references outside the timing: only the baselines are measured.
  std::vector<std::shared_ptr<const RowBlockReference>> refs(static_cast<size_t>(s.seq_q / 8));
  on_two_threads(s.seq_q / 8, [&](int64_t i) {
    refs[static_cast<size_t>(i)] = compute_row_block(in, {0, 0, static_cast<int32_t>(i * 8), 8}, bounds);
  });
  for (auto _ : state)
    on_two_threads(s.seq_q / 8, [&](int64_t i) {
      benchmark::DoNotOptimize(naive_row_block_errors(s, floats[0], *refs[static_cast<size_t>(i)]).o_dtype);
    });
}

BENCHMARK(BM_Prepare)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SplitK)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);
BENCHMARK(BM_SplitKTogether)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);
BENCHMARK(BM_FA1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);
BENCHMARK(BM_NaiveSplitK)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);

}  // namespace
}  // namespace ts

BENCHMARK_MAIN();
