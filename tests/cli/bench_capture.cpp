// The capture pipeline's costs beyond the kernels, and opening a trace as a RunView.
//
//   cmake --build build/release --target bench_capture
//   build/release/tests/cli/bench_capture [--benchmark_filter=...]   TS_BENCH_EVENTS=8192
//
//   OpenRun/warm      open_run of a trace of TS_BENCH_EVENTS fa1.step events (block_m x 128
//                     floats of O each) from the page cache: map, check, read config/tiling,
//                     check every event against them, build the RunView
//   OpenScanTrace     TraceFile::open + every event's header: the trace layer alone, for scale
//   CaptureDemo       run_capture of the demo (Split-K, double_count_l, 2 heads, seq_q 16,
//                     seq_kv 1024, d 64, fp16, 8 splits) on the CPU backend, all cores
//   LaunchDemo        launch_attention of the same inputs: the kernels alone
//   SaveDemo          save_trace of the demo capture (atomic write with fsync)
// Counter `allocs`: heap allocations during open (must not grow with the number of events).
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

#include <nlohmann/json.hpp>

#include "app/model/capture/run_capture.h"
#include "app/model/trace_session.h"
#include "kernels/kernel_stages.h"
#include "instrumentation/trace/trace_file.h"
#include "base/random_inputs.h"

static std::atomic<uint64_t> g_allocations{0};
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace {

namespace fs = std::filesystem;

size_t event_count() {
  const char* s = std::getenv("TS_BENCH_EVENTS");
  return s ? std::strtoull(s, nullptr, 10) : 8192;
}

// A synthetic fa1 trace whose events fit its config: heads x 32 query tiles x 32 kv tiles.
const fs::path& synthetic_trace() {
  static const fs::path path = [] {
    constexpr int kTiles = 32;
    ts::AttentionConfig c;
    c.head_dim = 128;
    ts::Tiling t = ts::make_tiling(c, ts::kCpuNominalSmCount);
    c.heads = static_cast<int64_t>(std::max<size_t>(1, event_count() / (kTiles * kTiles)));
    c.seq_q = int64_t{t.block_m} * kTiles;
    c.seq_kv = int64_t{t.block_n} * kTiles;
    c.num_splits = 1;
    t = ts::make_tiling(c, ts::kCpuNominalSmCount);
    ts::CapturedEvents e;
    e.stages = ts::kernel_stage_table(c.kernel);
    e.max_rows = t.block_m;
    e.head_dim = 128;
    for (int32_t h = 0; h < c.heads; ++h)
      for (int32_t q = 0; q < kTiles; ++q)
        for (int32_t kv = 0; kv < kTiles; ++kv) {
          ts::EventHeader ev{};
          ev.stage = ts::kFa1StepStage;
          ev.batch = 0;
          ev.head = h;
          ev.kv_head = h;
          ev.q_begin = q * t.block_m;
          ev.rows = t.block_m;
          ev.split = -1;
          ev.step = kv;
          ev.block = h * kTiles + q;
          ev.num_key_ranges = 1;
          ev.keys[0] = {0, (kv + 1) * t.block_n};
          e.headers.push_back(ev);
        }
    const size_t rows = e.headers.size() * static_cast<size_t>(t.block_m);
    e.m.assign(rows, 1.0f);
    e.l.assign(rows, 2.0f);
    e.o.assign(rows * 128, 0.5f);
    e.requested = e.headers.size();
    fs::path p = fs::temp_directory_path() / "tilescope-bench-open-run.trace.safetensors";
    ts::write_trace(p, {.events = &e,
                        .attention = ts::attention_spec(c),
                        .metadata = {{"config", nlohmann::json(c).dump()},
                                     {"tiling", nlohmann::json(t).dump()}}});
    return p;
  }();
  return path;
}

void OpenRunWarm(benchmark::State& state) {
  const fs::path& p = synthetic_trace();
  (void)ts::open_run(p);  // warm the page cache
  uint64_t allocs = 0;
  for (auto _ : state) {
    const uint64_t before = g_allocations.load();
    ts::RunView v = ts::open_run(p);
    allocs = g_allocations.load() - before;
    benchmark::DoNotOptimize(v.o.data());
  }
  state.counters["events"] = static_cast<double>(event_count());
  state.counters["allocs"] = static_cast<double>(allocs);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fs::file_size(p)));
}
BENCHMARK(OpenRunWarm)->Name("OpenRun/warm")->Unit(benchmark::kMillisecond)->Repetitions(5)
    ->ReportAggregatesOnly(true);

void OpenScanTrace(benchmark::State& state) {
  const fs::path& p = synthetic_trace();
  for (auto _ : state) {
    const ts::TraceFile f = ts::TraceFile::open(p);
    int64_t sum = 0;
    for (size_t i = 0; i < f.num_events(); ++i) sum += f.header(i).q_begin;
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fs::file_size(p)));
}
BENCHMARK(OpenScanTrace)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

ts::CaptureSpec demo_spec() {
  ts::CaptureSpec s;
  s.config.kernel = ts::KernelKind::splitk;
  s.config.fault = ts::Fault::double_count_l;
  s.config.heads = 2;
  s.config.seq_q = 16;
  s.config.seq_kv = 1024;
  s.config.head_dim = 64;
  s.config.dtype = ts::DType::f16;
  s.config.num_splits = 8;
  s.backend = ts::Backend::cpu;
  s.inputs = ts::RandomInputSpec{.seed = 1};
  return s;
}

void CaptureDemo(benchmark::State& state) {
  const ts::CaptureSpec spec = demo_spec();
  for (auto _ : state) benchmark::DoNotOptimize(ts::run_capture(spec).view.o.data());
}
BENCHMARK(CaptureDemo)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

void LaunchDemo(benchmark::State& state) {
  const ts::CaptureSpec spec = demo_spec();
  ts::LaunchRequest r;
  r.config = spec.config;
  r.backend = ts::Backend::cpu;
  r.trace = spec.trace;
  const ts::AttentionInputs in = ts::make_random_inputs(spec.config, {.seed = 1});
  for (auto _ : state) benchmark::DoNotOptimize(ts::launch_attention(r, in).o.bytes.data());
}
BENCHMARK(LaunchDemo)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

void SaveDemo(benchmark::State& state) {
  const ts::CaptureResult r = ts::run_capture(demo_spec());
  const fs::path p = fs::temp_directory_path() / "tilescope-bench-demo.trace.safetensors";
  for (auto _ : state) ts::save_trace(r, p);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fs::file_size(p)));
  fs::remove(p);
}
BENCHMARK(SaveDemo)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove(fs::temp_directory_path() / "tilescope-bench-open-run.trace.safetensors", ec);
  return 0;
}
