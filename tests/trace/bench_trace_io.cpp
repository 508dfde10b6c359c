// Trace file I/O against the disk's own speed (docs/perf.md's target: traces written and opened
// at disk speed, no per-event allocation).
//
//   cmake --build build/release --target bench_trace_io
//   build/release/tests/trace/bench_trace_io [--benchmark_filter=...]
//   TS_BENCH_DIR=/some/disk/folder (default: the temp folder) TS_BENCH_EVENTS=32768
//
// A trace of 32768 events, max_rows 64, head_dim 128 (1.09 GB: 32 KiB of O per event). Pairs:
//   RawWrite      write() of the same number of bytes to a new file + fsync (the disk's speed)
//   WriteTrace    write_trace() (columns, header, payloads, fsync, rename)
//   RawRead       read() of the file in 8 MiB chunks                   (the disk's read speed)
//   OpenScanTrace TraceFile::open + every event's header, m, l, and one O value per 4 KiB page
// Each runs 5 repetitions of 2 iterations (the machine is shared: read the medians), each /cold (the file's pages evicted from the page cache first, with posix_fadvise) and
// /warm (cached). Counters: bytes/s, and heap allocations during open+scan (`allocs`), which
// must not grow with the number of events.
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <vector>

#include "instrumentation/trace/trace_file.h"

// Counts heap allocations (to show that opening and scanning a trace allocates per tensor,
// not per event).
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
  return s ? std::strtoull(s, nullptr, 10) : 32768;
}

fs::path bench_dir() {
  const char* s = std::getenv("TS_BENCH_DIR");
  return s ? fs::path(s) : fs::temp_directory_path();
}

// What the events are of: 2048 query rows on 2048 keys, head dim 128 (the events' key
// ranges lie inside it).
ts::AttentionSpec attention() {
  ts::AttentionSpec s;
  s.seq_q = s.seq_kv = 2048;
  s.head_dim = 128;
  return s;
}

const ts::CapturedEvents& events() {
  static const ts::CapturedEvents ev = [] {
    ts::CapturedEvents e;
    e.max_rows = 64;
    e.head_dim = 128;
    e.stages = {{"step", ts::StageKind::state, 0}, {"partial", ts::StageKind::state, 0},
                {"merge", ts::StageKind::merge, 1}, {"final", ts::StageKind::final, 1}};
    const size_t n = event_count(), rows = 64, hd = 128;
    uint32_t state = 12345;
    const auto next = [&] {  // a cheap generator: 1 GB of floats in a fraction of a second
      state = state * 1664525u + 1013904223u;
      return static_cast<float>(static_cast<int32_t>(state)) * 0x1p-31f;
    };
    for (size_t i = 0; i < n; ++i) {
      ts::EventHeader h{};
      h.stage = static_cast<int32_t>(i % 4);
      h.kv_head = -1;
      h.q_begin = static_cast<int32_t>((i / 16) % 32) * 64;
      h.rows = 64;
      h.split = -1;
      h.step = static_cast<int32_t>(i % 16);
      h.block = static_cast<int32_t>(i / 16);
      h.where = -1;
      h.num_key_ranges = 1 + static_cast<int32_t>(i % 2);  // a second range now and then
      h.keys[0] = {0, static_cast<int32_t>(i % 16 + 1) * 64};
      if (h.num_key_ranges == 2) h.keys[1] = {1536, 2048};
      h.time_ns = i * 100;
      e.headers.push_back(h);
    }
    e.m.resize(n * rows);
    e.l.resize(n * rows);
    e.o.resize(n * rows * hd);
    for (auto* v : {&e.m, &e.l, &e.o})
      for (float& x : *v) x = next();
    e.requested = n;
    return e;
  }();
  return ev;
}

uint64_t trace_bytes() {
  const auto& e = events();
  return (e.m.size() + e.l.size() + e.o.size()) * 4 + e.size() * sizeof(ts::EventHeader);
}

const fs::path& trace_path() {
  static const fs::path p = bench_dir() / ("bench_trace_io." + std::to_string(::getpid()) + ".trace.safetensors");
  return p;
}
const fs::path& raw_path() {
  static const fs::path p = bench_dir() / ("bench_trace_io." + std::to_string(::getpid()) + ".raw");
  return p;
}

void evict(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("bench: cannot open " + path.string());
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void write_raw(const fs::path& path, uint64_t bytes) {
  const auto& o = events().o;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("bench: cannot create " + path.string());
  const auto* src = reinterpret_cast<const char*>(o.data());
  const uint64_t src_size = o.size() * 4;
  uint64_t done = 0;
  while (done < bytes) {
    const uint64_t chunk = std::min<uint64_t>(bytes - done, src_size - done % src_size);
    const ssize_t n = ::write(fd, src + done % src_size, std::min<uint64_t>(chunk, 1u << 30));
    if (n <= 0) throw std::runtime_error("bench: write failed");
    done += static_cast<uint64_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

void BM_RawWrite(benchmark::State& state) {
  const uint64_t bytes = trace_bytes();
  for (auto _ : state) {
    state.PauseTiming();  // both writers make a new file: freeing the old one is not timed
    fs::remove(raw_path());
    state.ResumeTiming();
    write_raw(raw_path(), bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_WriteTrace(benchmark::State& state) {
  const auto& ev = events();
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove(trace_path());
    state.ResumeTiming();
    ts::write_trace(trace_path(), {.events = &ev, .attention = attention()});
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fs::file_size(trace_path())));
}

void BM_RawRead(benchmark::State& state) {
  const bool cold = state.range(0) == 1;
  if (!fs::exists(raw_path())) write_raw(raw_path(), trace_bytes());
  std::vector<char> buffer(8u << 20);
  uint64_t total = 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      evict(raw_path());
      state.ResumeTiming();
    }
    const int fd = ::open(raw_path().c_str(), O_RDONLY);
    ssize_t n;
    while ((n = ::read(fd, buffer.data(), buffer.size())) > 0) total += static_cast<uint64_t>(n);
    ::close(fd);
    benchmark::DoNotOptimize(buffer.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(total));
}

void BM_OpenScanTrace(benchmark::State& state) {
  const bool cold = state.range(0) == 1;
  if (!fs::exists(trace_path())) ts::write_trace(trace_path(), {.events = &events(), .attention = attention()});
  uint64_t allocations = 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      evict(trace_path());
      state.ResumeTiming();
    }
    const uint64_t before = g_allocations.load();
    const ts::TraceFile t = ts::TraceFile::open(trace_path());
    float acc = 0.0f;
    for (size_t i = 0; i < t.num_events(); ++i) {
      const ts::EventHeader& h = t.header(i);
      acc += static_cast<float>(h.rows + h.step + h.keys[0].end);
      const std::span<const float> m = t.m(i), l = t.l(i), o = t.o(i);
      for (int r = 0; r < h.rows; ++r) acc += m[static_cast<size_t>(r)] + l[static_cast<size_t>(r)];
      for (size_t k = 0; k < o.size(); k += 1024) acc += o[k];  // every 4 KiB page
    }
    benchmark::DoNotOptimize(acc);
    allocations = g_allocations.load() - before;
  }
  state.counters["allocs"] = static_cast<double>(allocations);
  state.counters["events"] = static_cast<double>(events().size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * fs::file_size(trace_path())));
}

void cleanup() {
  std::error_code ec;
  fs::remove(trace_path(), ec);
  fs::remove(raw_path(), ec);
}

}  // namespace

BENCHMARK(BM_RawWrite)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_WriteTrace)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_RawRead)->ArgName("cold")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_OpenScanTrace)->ArgName("cold")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2)->Repetitions(5)->ReportAggregatesOnly(true);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::atexit(cleanup);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  cleanup();
  return 0;
}
