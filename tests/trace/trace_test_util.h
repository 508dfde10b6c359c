// Helpers of the trace-file tests (beside tests/support's temporary folder and the program's
// seed, run_seed(), which they draw from): random stage tables, attention descriptions and
// captured events (every header field over its valid range; payloads that are not zeros and
// carry NaN / Inf / -0 / subnormals), and whole-file byte I/O for corrupting files.
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
#include <map>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "base/attention_spec.h"
#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/trace_capture.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts::test {

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

// A stage table as a user's recorder might declare it: 1 to 6 stages of every kind, names of
// their own choosing (some with non-ASCII bytes), passes 0..2.
inline std::vector<StageInfo> random_stage_table(std::mt19937_64& rng) {
  static const char* const kNames[] = {"my_partial", "combine", "epilogue", "fa3.mainloop", "merge \xc3\xa9tape",
                                       "final", "decode.tile", "x"};
  const size_t n = 1 + rng() % 6;
  std::vector<StageInfo> stages;
  for (size_t i = 0; i < n; ++i) {
    StageInfo s;
    s.name = std::string(kNames[i]) + (rng() % 2 ? "" : "." + std::to_string(i));
    s.kind = static_cast<StageKind>(rng() % 3);
    s.pass = static_cast<int32_t>(rng() % 3);
    stages.push_back(std::move(s));
  }
  return stages;
}

// An attention description with GQA, a causal alignment and a window now and then.
inline AttentionSpec random_spec(std::mt19937_64& rng, int64_t head_dim) {
  AttentionSpec s;
  s.batch = 1 + static_cast<int64_t>(rng() % 4);
  s.heads_kv = 1 + static_cast<int64_t>(rng() % 4);
  s.heads_q = s.heads_kv * (1 + static_cast<int64_t>(rng() % 4));
  s.seq_q = 1 + static_cast<int64_t>(rng() % 300);
  s.seq_kv = 1 + static_cast<int64_t>(rng() % 2000);
  s.head_dim = head_dim;
  s.dtype = static_cast<DType>(rng() % 3);
  s.causal = static_cast<CausalAlign>(rng() % 3);
  if (rng() % 4 == 0) s.window_left = static_cast<int64_t>(rng() % 100);
  if (rng() % 2 == 0) s.scale = 0.125 + static_cast<double>(rng() % 100) / 64.0;
  return s;
}

// One header the reader accepts for this stage table, description and max_rows: every field
// drawn over its whole valid range (key ranges past num_key_ranges left {0, 0}, as the reader
// returns them).
inline EventHeader random_header(std::mt19937_64& rng, size_t num_stages, const AttentionSpec& spec,
                                 int32_t max_rows) {
  const auto pick = [&](int64_t lo, int64_t hi) {
    return static_cast<int32_t>(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
  };
  EventHeader h{};
  h.stage = pick(0, static_cast<int64_t>(num_stages) - 1);
  h.convention = pick(0, kConventionMask);
  h.batch = pick(0, spec.batch - 1);
  h.head = pick(0, spec.heads_q - 1);
  h.kv_head = pick(-1, spec.heads_kv - 1);
  h.rows = pick(0, std::min<int64_t>(max_rows, spec.seq_q));
  h.q_begin = pick(0, spec.seq_q - h.rows);
  h.split = pick(-1, 63);
  h.step = pick(0, 100000);
  h.block = pick(-1, 1 << 30);
  h.where = pick(-1, 131);
  h.num_key_ranges = pick(0, kMaxKeyRanges);
  for (int32_t k = 0; k < h.num_key_ranges; ++k) {
    const int32_t a = pick(0, spec.seq_kv), b = pick(0, spec.seq_kv);
    h.keys[k] = {std::min(a, b), std::max(a, b)};
  }
  h.time_ns = rng();  // all 64 bits, above INT64_MAX too
  return h;
}

// `n` random events (and `missing` planned-but-unwritten ones) that the trace reader accepts,
// with payloads from random_payload.
inline CapturedEvents random_events(std::mt19937_64& rng, size_t n, int32_t max_rows, const AttentionSpec& spec,
                                    std::vector<StageInfo> stages, size_t missing = 0) {
  CapturedEvents ev;
  ev.max_rows = max_rows;
  ev.head_dim = static_cast<int32_t>(spec.head_dim);
  ev.stages = std::move(stages);
  for (size_t i = 0; i < n; ++i) ev.headers.push_back(random_header(rng, ev.stages.size(), spec, max_rows));
  for (size_t i = 0; i < missing; ++i) {
    EventHeader h = random_header(rng, ev.stages.size(), spec, max_rows);
    h.where = -1;
    h.time_ns = 0;
    ev.missing.push_back(h);
  }
  const size_t rows = static_cast<size_t>(max_rows), hd = static_cast<size_t>(spec.head_dim);
  ev.m.resize(n * rows);
  ev.l.resize(n * rows);
  ev.o.resize(n * rows * hd);
  for (float& x : ev.m) x = random_payload(rng);
  for (float& x : ev.l) x = random_payload(rng);
  for (float& x : ev.o) x = random_payload(rng);
  ev.dropped = rng() % 1000;
  ev.requested = n + missing + ev.dropped;
  return ev;
}

// Random events of a random small description and stage table.
inline CapturedEvents random_events(std::mt19937_64& rng, size_t n, int32_t max_rows, int32_t head_dim,
                                    AttentionSpec* spec_out = nullptr) {
  const AttentionSpec spec = random_spec(rng, head_dim);
  if (spec_out != nullptr) *spec_out = spec;
  return random_events(rng, n, max_rows, spec, random_stage_table(rng), n / 10);
}

// The rows per event a trace file stores for these events: the most any event or missing event
// holds (the writer's compact payloads, instrumentation/trace/trace_file.cpp), or max_rows when
// there are none.
inline int32_t stored_rows_of(const CapturedEvents& ev) {
  int32_t rows = ev.headers.empty() && ev.missing.empty() ? ev.max_rows : 0;
  for (const auto* list : {&ev.headers, &ev.missing})
    for (const EventHeader& h : *list) rows = std::max(rows, h.rows);
  return rows;
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
