// bench_analysis: `tilescope diff` of a full trace — S = 4096, D = 128, one head, every event —
// for FA-1 and Split-K (8 splits), on this machine: time, and peak memory from getrusage.
//
// The traces are captured once on the CPU backend by a child process (so that the launch's
// buffers never count towards this process's peak) and kept in TS_BENCH_DIR (default
// /tmp/tilescope-bench-analysis); the benchmark maps them as `tilescope diff` does and analyses
// them. Counters: events, trace_MiB (the file), peak_rss_MiB (ru_maxrss of this process after
// the runs: the mapped trace plus the analysis), analysis_MiB (the largest resident-set growth
// sampled every 2 ms during one analysis, over the resident set before it, the trace already
// paged in).
//
//   cmake --build build/release --target bench_analysis
//   build/release/tests/analysis/bench_analysis [--benchmark_filter=Diff]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "app/model/analysis/analyze_run.h"
#include "app/model/trace_session.h"
#include "instrumentation/trace/trace_file.h"
#include "kernels/launcher.h"
#include "base/random_inputs.h"

namespace ts {
namespace {

struct BenchRun {
  const char* name;
  AttentionConfig config;
};

AttentionConfig bench_config(KernelKind kernel) {
  AttentionConfig c;
  c.kernel = kernel;
  c.seq_q = c.seq_kv = 4096;
  c.head_dim = 128;
  c.num_splits = kernel == KernelKind::splitk ? 8 : 0;
  return c;
}

std::filesystem::path bench_dir() {
  const char* d = std::getenv("TS_BENCH_DIR");
  return d ? std::filesystem::path(d) : std::filesystem::temp_directory_path() / "tilescope-bench-analysis";
}

std::filesystem::path trace_path(KernelKind kernel) {
  return bench_dir() / (std::string("diff_") + std::string(to_string(kernel)) + "_s4096_d128.trace.safetensors");
}

// Launch with tracing and write the trace (in a child process).
void capture(KernelKind kernel) {
  const AttentionConfig c = bench_config(kernel);
  const AttentionInputs inputs = make_random_inputs(c, {.seed = 4096});
  LaunchRequest req;
  req.config = c;
  req.backend = Backend::cpu;
  req.trace.enabled = true;
  const LaunchOutcome out = launch_attention(req, inputs);
  HeadInputs ti;
  ti.q_pairs = ti.kv_pairs = {{0, 0}};
  ti.q = inputs.q;
  ti.k = inputs.k;
  ti.v = inputs.v;
  ti.q.shape = {1, c.seq_q, c.head_dim};
  ti.k.shape = ti.v.shape = {1, c.seq_kv, c.head_dim};
  nlohmann::json config = out.config, tiling = out.tiling;
  std::filesystem::create_directories(bench_dir());
  write_trace(trace_path(kernel), {.events = &out.events,
                                   .attention = attention_spec(out.config),
                                   .metadata = {{"config", config.dump()}, {"tiling", tiling.dump()}},
                                   .inputs = &ti,
                                   .output = &out.o,
                                   .output_lse = &out.lse});
}

void ensure_trace(KernelKind kernel) {
  if (std::filesystem::exists(trace_path(kernel))) return;
  std::fprintf(stderr, "capturing %s ...\n", trace_path(kernel).c_str());
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      capture(kernel);
      _exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "capture failed: %s\n", e.what());
      _exit(1);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::exit(1);
}

// The trace as a RunView (what `tilescope diff` analyses).
RunView open_bench_run(KernelKind kernel) { return open_run(trace_path(kernel)); }

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

void BM_Diff(benchmark::State& state, KernelKind kernel) {
  const RunView run = open_bench_run(kernel);
  // Page the mapped trace in first, so that analysis_MiB is the analysis's own memory.
  double touched = 0;
  for (float x : run.o) touched += x;
  benchmark::DoNotOptimize(touched);
  double growth = 0;
  size_t failing = 0;
  for (auto _ : state) {
    const double before = rss_mib();
    std::atomic<bool> done{false};
    double sampled = before;
    std::thread sampler([&] {
      while (!done.load()) {
        sampled = std::max(sampled, rss_mib());
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    const AnalysisReport report = analyze_run(run);
    done = true;
    sampler.join();
    growth = std::max(growth, sampled - before);
    failing = report.clean() ? 0 : 1;
    benchmark::DoNotOptimize(report.verdict);
  }
  if (failing) state.SkipWithError("the correct kernel's trace was not clean");
  state.counters["events"] = static_cast<double>(run.num_events());
  state.counters["trace_MiB"] = static_cast<double>(std::filesystem::file_size(trace_path(kernel))) / (1 << 20);
  state.counters["analysis_MiB"] = growth;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

// The parts: the float64 reference of every traced row block, and the naive baselines.
void BM_ReferenceTiles(benchmark::State& state, KernelKind kernel) {
  const RunView run = open_bench_run(kernel);
  for (auto _ : state) {
    RunReferenceOptions o;
    o.cache_bytes = 0;
    RunReference ref(run, o);
    std::atomic<int64_t> next{0};
    auto work = [&] {
      for (int64_t i; (i = next.fetch_add(1)) < static_cast<int64_t>(ref.row_blocks().size());)
        benchmark::DoNotOptimize(ref.block(ref.row_blocks()[static_cast<size_t>(i)]));
    };
    std::thread t(work);
    work();
    t.join();
  }
}

// The same row blocks, each with the naive baselines' errors on it: minus the above, the baselines.
void BM_ReferenceAndNaive(benchmark::State& state, KernelKind kernel) {
  const RunView run = open_bench_run(kernel);
  for (auto _ : state) {
    RunReferenceOptions o;
    o.cache_bytes = 0;
    RunReference ref(run, o);
    std::atomic<int64_t> next{0};
    auto work = [&] {
      for (int64_t i; (i = next.fetch_add(1)) < static_cast<int64_t>(ref.row_blocks().size());) {
        const RowBlock& rb = ref.row_blocks()[static_cast<size_t>(i)];
        benchmark::DoNotOptimize(ref.naive_errors(*ref.block(rb)));
      }
    };
    std::thread t(work);
    work();
    t.join();
  }
}

}  // namespace
}  // namespace ts

int main(int argc, char** argv) {
  ts::ensure_trace(ts::KernelKind::fa1);
  ts::ensure_trace(ts::KernelKind::splitk);
  // The whole diff first, so that the peak memory it reports is its own (getrusage's peak only
  // grows), then its parts.
  const std::pair<const char*, ts::KernelKind> kernels[] = {{"fa1", ts::KernelKind::fa1},
                                                            {"splitk", ts::KernelKind::splitk}};
  for (auto [name, kernel] : kernels)
    benchmark::RegisterBenchmark((std::string("Diff/") + name).c_str(), ts::BM_Diff, kernel)
        ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);
  for (auto [name, kernel] : kernels) {
    benchmark::RegisterBenchmark((std::string("ReferenceTiles/") + name).c_str(), ts::BM_ReferenceTiles, kernel)
        ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);
    benchmark::RegisterBenchmark((std::string("ReferenceAndNaive/") + name).c_str(), ts::BM_ReferenceAndNaive, kernel)
        ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
