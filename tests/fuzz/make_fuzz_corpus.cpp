// Writes the fuzz targets' seed corpus with tilescope's own writers (nothing binary is kept
// in the repository): small valid format 2 traces of several shapes (a user-like stage table,
// GQA, several key ranges, missing events, with and without inputs and output), a format 1
// trace, plain safetensors files of every dtype, .npy files of every dtype, and truncated
// copies of some of them. Usage: make_fuzz_corpus FOLDER (its trace/ npy/ work_trace/
// work_npy/ subfolders are emptied first).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/tensor_files.h"
#include "instrumentation/trace/trace_file.h"

namespace fs = std::filesystem;

namespace {

void truncated_copy(const fs::path& from, const fs::path& to, double fraction) {
  std::ifstream in(from, std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  b.resize(static_cast<size_t>(static_cast<double>(b.size()) * fraction));
  std::ofstream(to, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}

// An attention description the events fit: GQA (4 query heads on 2 kv heads), causal.
ts::AttentionSpec spec(int64_t head_dim) {
  ts::AttentionSpec s;
  s.batch = 2;
  s.heads_q = 4;
  s.heads_kv = 2;
  s.seq_q = 8;
  s.seq_kv = 40;
  s.head_dim = head_dim;
  s.dtype = ts::DType::bf16;
  s.causal = ts::CausalAlign::bottom_right;
  return s;
}

// Events of a user-like stage table (state, merge, final), one to three key ranges each, and
// `missing` planned events that were never written.
ts::CapturedEvents events(std::mt19937& rng, size_t n, int32_t max_rows, int32_t head_dim, size_t missing) {
  ts::CapturedEvents ev;
  ev.max_rows = max_rows;
  ev.head_dim = head_dim;
  ev.stages = {{"my_partial", ts::StageKind::state, 0}, {"combine", ts::StageKind::merge, 1},
               {"epilogue", ts::StageKind::final, 1}};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto header = [&](size_t i) {
    ts::EventHeader h{};
    h.stage = static_cast<int32_t>(i % 3);
    h.convention = h.stage == 2 ? ts::kNormalized : static_cast<int32_t>(i % 2) * (ts::kNormalized | ts::kLogBase2);
    h.batch = static_cast<int32_t>(rng() % 2);
    h.head = static_cast<int32_t>(rng() % 4);
    h.kv_head = h.head / 2;
    h.rows = max_rows - static_cast<int32_t>(i % 2);
    h.q_begin = static_cast<int32_t>(rng() % static_cast<unsigned>(9 - h.rows));
    h.split = h.stage == 2 ? -1 : static_cast<int32_t>(i % 3);
    h.step = static_cast<int32_t>(i);
    h.block = static_cast<int32_t>(i / 2);
    h.where = static_cast<int32_t>(rng() % 8);
    h.num_key_ranges = 1 + static_cast<int32_t>(i % 3);
    for (int32_t k = 0; k < h.num_key_ranges; ++k) h.keys[k] = {10 * k, 10 * k + 5 + static_cast<int32_t>(i % 5)};
    h.time_ns = 1000 * i;
    return h;
  };
  for (size_t i = 0; i < n; ++i) ev.headers.push_back(header(i));
  for (size_t i = 0; i < missing; ++i) ev.missing.push_back(header(i));
  const size_t rows = static_cast<size_t>(max_rows), hd = static_cast<size_t>(head_dim);
  ev.m.resize(n * rows);
  ev.l.resize(n * rows);
  ev.o.resize(n * rows * hd);
  for (auto* v : {&ev.m, &ev.l, &ev.o})
    for (float& x : *v) x = normal(rng);
  ev.requested = n + missing;
  return ev;
}

// A format 1 trace (tilescope 0.1's schema: tiles, four fixed stages, the config in metadata),
// which the reader converts: an FA-1 query tile of 4 rows over two kv tiles of 4 keys.
void write_format_1(const fs::path& path) {
  const int32_t columns[12][3] = {
      {0, 0, 3},  // stage: fa1.step, fa1.step, final
      {0, 0, 1},  // convention
      {0, 0, 0},  // batch
      {0, 0, 0},  // head
      {0, 0, 0},  // q_tile
      {0, 0, 0},  // kv_tile_begin
      {1, 2, 2},  // kv_tile_end
      {-1, -1, -1},  // split
      {0, 1, 0},  // step
      {4, 4, 4},  // rows
      {0, 0, 0},  // where
      {0, 0, 0},  // block
  };
  const char* names[12] = {"stage", "convention", "batch", "head", "q_tile", "kv_tile_begin",
                           "kv_tile_end", "split", "step", "rows", "where", "block"};
  const int64_t times[3] = {10, 20, 30};
  std::vector<float> m(12, 0.5f), l(12, 2.0f), o(12 * 32, 0.25f);
  std::vector<ts::TensorToWrite> t;
  for (int c = 0; c < 12; ++c) t.push_back({std::string("events.") + names[c], ts::ElemType::I32, {3}, columns[c]});
  t.push_back({"events.time_ns", ts::ElemType::I64, {3}, times});
  t.push_back({"events.m", ts::ElemType::F32, {3, 4}, m.data()});
  t.push_back({"events.l", ts::ElemType::F32, {3, 4}, l.data()});
  t.push_back({"events.o", ts::ElemType::F32, {3, 4, 32}, o.data()});
  ts::write_safetensors(
      path, t,
      {{"tilescope_format", "1"}, {"block_m", "4"}, {"block_n", "4"}, {"head_dim", "32"}, {"dropped_events", "0"},
       {"requested_events", "3"},
       {"config", R"({"kernel":"fa1","fault":"none","batch":1,"heads":1,"seq_q":4,"seq_kv":8,"head_dim":32,)"
                  R"("dtype":"fp32","causal":false,"num_splits":0,"softmax_scale":0.0})"},
       {"stage_names", R"(["fa1.step","splitk.partial","splitk.reduce","final"])"}});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_corpus FOLDER\n");
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* sub : {"trace", "npy", "work_trace", "work_npy"}) {
    fs::remove_all(root / sub);
    fs::create_directories(root / sub);
  }
  std::mt19937 rng(12345);
  const fs::path t = root / "trace";

  const ts::CapturedEvents empty = events(rng, 0, 4, 8, 0);
  ts::write_trace(t / "empty.safetensors", {.events = &empty, .attention = spec(8)});
  const ts::CapturedEvents small = events(rng, 5, 4, 8, 0);
  ts::write_trace(t / "small.safetensors",
                  {.events = &small, .attention = spec(8), .metadata = {{"kernel", "fa1"}, {"config", "{\"seq_q\": 8}"}}});
  const ts::CapturedEvents odd = events(rng, 6, 3, 5, 2);
  ts::HeadInputs in;
  in.q_pairs = {{0, 1}, {1, 3}};
  in.kv_pairs = {{0, 0}, {1, 1}};
  in.q = ts::HostTensor::zeros(ts::DType::bf16, {2, 8, 5});
  in.k = ts::HostTensor::zeros(ts::DType::bf16, {2, 40, 5});
  in.v = ts::HostTensor::zeros(ts::DType::bf16, {2, 40, 5});
  for (ts::HostTensor* x : {&in.q, &in.k, &in.v})
    for (int64_t i = 0; i < x->numel(); ++i) x->set_float(i, static_cast<float>(i % 17) * 0.25f - 1.0f);
  ts::HostTensor out = ts::HostTensor::zeros(ts::DType::f16, {2, 4, 8, 5});
  for (int64_t i = 0; i < out.numel(); ++i) out.set_float(i, static_cast<float>(i % 100));
  std::vector<float> lse(2 * 4 * 8, 1.5f);
  std::vector<double> extra = {1.0, -2.0, 3.5};
  ts::write_trace(t / "inputs.safetensors",
                  {.events = &odd, .attention = spec(5), .metadata = {{"fault", "masked_nan"}}, .inputs = &in,
                   .output = &out, .output_lse = &lse, .extra = {{"x.extra", ts::ElemType::F64, {3}, extra.data()}}});
  write_format_1(t / "format1.safetensors");
  truncated_copy(t / "small.safetensors", t / "small_cut.safetensors", 0.7);
  truncated_copy(t / "inputs.safetensors", t / "inputs_cut.safetensors", 0.95);

  // Plain safetensors of every dtype.
  std::vector<uint8_t> raw(64);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(rng() & 1);
  std::vector<ts::TensorToWrite> all;
  for (ts::ElemType type : {ts::ElemType::BOOL, ts::ElemType::U8, ts::ElemType::I8, ts::ElemType::I16,
                            ts::ElemType::U16, ts::ElemType::I32, ts::ElemType::U32, ts::ElemType::I64,
                            ts::ElemType::U64, ts::ElemType::F16, ts::ElemType::BF16, ts::ElemType::F32,
                            ts::ElemType::F64})
    all.push_back({std::string(ts::to_string(type)), type, {2, 2}, raw.data()});
  ts::write_safetensors(t / "dtypes.safetensors", all, {{"k", "v"}});

  // .npy of every dtype.
  const fs::path n = root / "npy";
  for (ts::ElemType type : {ts::ElemType::BOOL, ts::ElemType::U8, ts::ElemType::I32, ts::ElemType::I64,
                            ts::ElemType::F16, ts::ElemType::F32, ts::ElemType::F64}) {
    const int64_t shape[2] = {2, 3};
    ts::write_npy(n / (std::string(ts::to_string(type)) + ".npy"), type, shape, raw.data());
  }
  const int64_t scalar_shape[1] = {0};
  ts::write_npy(n / "empty.npy", ts::ElemType::F32, std::span<const int64_t>(scalar_shape, 0), raw.data());
  ts::write_npy(n / "zero.npy", ts::ElemType::F32, scalar_shape, raw.data());
  truncated_copy(n / "F32.npy", n / "F32_cut.npy", 0.8);
  return 0;
}
