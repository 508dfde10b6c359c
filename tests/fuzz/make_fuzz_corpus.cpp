// Writes the fuzz targets' seed corpus with tilescope's own writers (nothing binary is kept
// in the repository): small valid traces of several shapes, with and without inputs and
// output, plain safetensors files of every dtype, .npy files of every dtype, and truncated
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

ts::CapturedEvents events(std::mt19937& rng, size_t n, int32_t block_m, int32_t head_dim) {
  ts::CapturedEvents ev;
  ev.block_m = block_m;
  ev.block_n = 16;
  ev.head_dim = head_dim;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    ts::EventHeader h{};
    h.stage = static_cast<int32_t>(i % ts::kNumStages);
    h.convention = h.stage == 3 ? 1 : 0;
    h.batch = static_cast<int32_t>(rng() % 2);
    h.head = static_cast<int32_t>(rng() % 4);
    h.q_tile = static_cast<int32_t>(i / 4);
    h.kv_tile_begin = 0;
    h.kv_tile_end = static_cast<int32_t>(1 + i);
    h.split = h.stage == 1 ? static_cast<int32_t>(i % 3) : -1;
    h.step = static_cast<int32_t>(i);
    h.rows = block_m - static_cast<int32_t>(i % 2);
    h.where = static_cast<int32_t>(rng() % 8);
    h.block = static_cast<int32_t>(i / 2);
    h.time_ns = 1000 * i;
    ev.headers.push_back(h);
  }
  const size_t bm = static_cast<size_t>(block_m), hd = static_cast<size_t>(head_dim);
  ev.m.resize(n * bm);
  ev.l.resize(n * bm);
  ev.o.resize(n * bm * hd);
  for (auto* v : {&ev.m, &ev.l, &ev.o})
    for (float& x : *v) x = normal(rng);
  ev.requested = n;
  return ev;
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

  const ts::CapturedEvents empty = events(rng, 0, 4, 8);
  ts::write_trace(t / "empty.safetensors", {.events = &empty});
  const ts::CapturedEvents small = events(rng, 5, 4, 8);
  ts::write_trace(t / "small.safetensors",
                  {.events = &small, .metadata = {{"kernel", "fa1"}, {"config", "{\"seq_q\": 8}"}}});
  const ts::CapturedEvents odd = events(rng, 3, 3, 5);
  ts::TraceInputs in;
  in.pairs = {{0, 1}, {1, 0}};
  in.q = ts::HostTensor::zeros(ts::DType::bf16, {2, 3, 5});
  in.k = ts::HostTensor::zeros(ts::DType::bf16, {2, 4, 5});
  in.v = ts::HostTensor::zeros(ts::DType::bf16, {2, 4, 5});
  for (ts::HostTensor* x : {&in.q, &in.k, &in.v})
    for (int64_t i = 0; i < x->numel(); ++i) x->set_float(i, static_cast<float>(i) * 0.25f - 1.0f);
  ts::HostTensor out = ts::HostTensor::zeros(ts::DType::f16, {2, 1, 3, 5});
  for (int64_t i = 0; i < out.numel(); ++i) out.set_float(i, static_cast<float>(i));
  std::vector<double> extra = {1.0, -2.0, 3.5};
  ts::write_trace(t / "inputs.safetensors",
                  {.events = &odd, .metadata = {{"fault", "masked_nan"}}, .inputs = &in,
                   .output = &out, .extra = {{"x.extra", ts::ElemType::F64, {3}, extra.data()}}});
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
