// Helpers of the trace-file tests: a fresh temporary folder per test, a seed drawn fresh per
// run (printed; TS_TEST_SEED=<n> replays it), random captured events that are not zeros and
// carry NaN / Inf / -0 / subnormal payloads, and whole-file byte I/O for corrupting files.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/trace_capture.h"

namespace ts::test {

inline uint64_t test_seed() {
  static const uint64_t seed = []() -> uint64_t {
    if (const char* s = std::getenv("TS_TEST_SEED")) return std::strtoull(s, nullptr, 10);
    return uint64_t{std::random_device{}()} * 2654435761u + std::random_device{}();
  }();
  return seed;
}

// Records the seed with every test (shown on failure, and in the XML report).
#define TS_SEED_TRACE() \
  SCOPED_TRACE("seed " + std::to_string(::ts::test::test_seed()) + " (TS_TEST_SEED replays it)")

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "t";
    for (char& c : name)
      if (c == '/') c = '_';
    path_ = std::filesystem::temp_directory_path() /
            ("tilescope-test-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Names of the entries of the folder (to see what a failed write left behind).
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_))
      out.push_back(e.path().filename().string());
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

inline void write_bytes(const std::filesystem::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}
inline void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& b) {
  write_bytes(path, b.data(), b.size());
}

// A float drawn from a mix: mostly normal values of several magnitudes, with special values
// a file layer must carry bit-exactly.
inline float random_payload(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> kind(0, 99);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  switch (int k = kind(rng); k) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return std::numeric_limits<float>::infinity();
    case 2: return -std::numeric_limits<float>::infinity();
    case 3: return -0.0f;
    case 4: return std::numeric_limits<float>::denorm_min() * static_cast<float>(1 + k);
    case 5: {  // a NaN with a payload, to check bits survive rather than being canonicalised
      uint32_t bits = 0x7fc00000u | static_cast<uint32_t>(rng() & 0x3fffffu);
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    default: return normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10);
  }
}

// `n` random events that the trace reader accepts, with payloads from random_payload.
inline CapturedEvents random_events(std::mt19937_64& rng, size_t n, int32_t block_m,
                                    int32_t head_dim) {
  CapturedEvents ev;
  ev.block_m = block_m;
  ev.block_n = 32 + static_cast<int32_t>(rng() % 4) * 32;
  ev.head_dim = head_dim;
  const auto pick = [&](int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
  };
  for (size_t i = 0; i < n; ++i) {
    EventHeader h{};
    h.stage = pick(0, kNumStages - 1);
    h.convention = pick(0, 1);
    h.batch = pick(0, 7);
    h.head = pick(0, 31);
    h.q_tile = pick(0, 1000);
    h.kv_tile_begin = pick(0, 500);
    h.kv_tile_end = h.kv_tile_begin + pick(0, 500);
    h.split = pick(-1, 63);
    h.step = pick(0, 100000);
    h.rows = pick(1, block_m);
    h.where = pick(-1, 131);
    h.block = pick(0, 1 << 30);
    h.time_ns = rng();  // all 64 bits, above INT64_MAX too
    ev.headers.push_back(h);
  }
  const size_t bm = static_cast<size_t>(block_m), hd = static_cast<size_t>(head_dim);
  ev.m.resize(n * bm);
  ev.l.resize(n * bm);
  ev.o.resize(n * bm * hd);
  for (float& x : ev.m) x = random_payload(rng);
  for (float& x : ev.l) x = random_payload(rng);
  for (float& x : ev.o) x = random_payload(rng);
  ev.dropped = rng() % 1000;
  ev.requested = n + ev.dropped;
  return ev;
}

inline bool same_bits(const void* a, const void* b, size_t bytes) {
  return bytes == 0 || std::memcmp(a, b, bytes) == 0;  // an empty vector's data() may be null
}

// A safetensors file held in memory so that a test can change it and write it back
// (e.g. a valid trace made invalid in one precise way).
struct EditableTensor {
  std::string name;
  ElemType type;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(bytes.data());
  }
};
struct EditableFile {
  std::vector<EditableTensor> tensors;
  std::map<std::string, std::string> metadata;

  static EditableFile load(const std::filesystem::path& path) {
    const SafetensorsFile f = SafetensorsFile::open(path);
    EditableFile e;
    e.metadata = f.metadata();
    for (const TensorInfo& t : f.tensors()) {
      const auto b = f.bytes(t);
      e.tensors.push_back({t.name, t.type, t.shape, {b.begin(), b.end()}});
    }
    return e;
  }
  EditableTensor& at(const std::string& name) {
    for (auto& t : tensors)
      if (t.name == name) return t;
    throw std::runtime_error("test: no tensor " + name);
  }
  void remove(const std::string& name) {
    std::erase_if(tensors, [&](const EditableTensor& t) { return t.name == name; });
  }
  void save(const std::filesystem::path& path) const {
    std::vector<TensorToWrite> out;
    for (const auto& t : tensors) out.push_back({t.name, t.type, t.shape, t.bytes.data()});
    write_safetensors(path, out, metadata);
  }
};

}  // namespace ts::test
