// Traces and .npy files load in Python with numpy alone (no tilescope code): the numpy
// loader of docs/trace-format.md reads what the writer wrote, value for value, and tilescope
// reads what numpy writes and refuses, with its error, what it does not support.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/tensor_files.h"
#include "instrumentation/trace/trace_file.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

// Runs /usr/bin/python3 (Debian's, which has numpy) on a script of this folder.
void run_python(const std::string& script, const std::string& args) {
  const std::string cmd = std::string(TS_SYSTEM_PYTHON3) + " " + TS_TRACE_TEST_DIR + "/" + script +
                          " " + args;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "failed: " << cmd;
}

nlohmann::json read_json(const std::filesystem::path& path) {
  const auto bytes = test::read_bytes(path);
  return nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()),
                               reinterpret_cast<const char*>(bytes.data()) + bytes.size());
}

std::string sha_of(const void* p, size_t n) {
  return sha256_hex({static_cast<const std::byte*>(p), n});
}

std::vector<uint32_t> bits_of(const float* p, size_t n) {
  std::vector<uint32_t> out(n);
  std::memcpy(out.data(), p, n * 4);
  return out;
}

TEST(PythonInterop, NumpyLoadsATraceWithNoTilescopeCode) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  AttentionSpec spec;
  const CapturedEvents ev = test::random_events(rng, 50 + rng() % 50, 32, 64, &spec);
  ASSERT_FALSE(ev.missing.empty());
  // Per query head and per kv head: (0, 0) and the last of each.
  HeadInputs in;
  in.q_pairs = {{0, 0}, {static_cast<int32_t>(spec.batch - 1), static_cast<int32_t>(spec.heads_q - 1)}};
  in.kv_pairs = {{static_cast<int32_t>(spec.batch - 1), static_cast<int32_t>(spec.heads_kv - 1)}};
  if (in.q_pairs[0] == in.q_pairs[1]) in.q_pairs.pop_back();
  const DType dtype = spec.dtype;
  in.q = HostTensor::zeros(dtype, {static_cast<int64_t>(in.q_pairs.size()), spec.seq_q, 64});
  in.k = HostTensor::zeros(dtype, {1, spec.seq_kv, 64});
  in.v = HostTensor::zeros(dtype, {1, spec.seq_kv, 64});
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (HostTensor* t : {&in.q, &in.k, &in.v})
    for (int64_t i = 0; i < t->numel(); ++i) t->set_float(i, normal(rng));
  const std::map<std::string, std::string> meta = {{"kernel", "fa1"}, {"fault", "masked_nan"},
                                                   {"inputs_seed", std::to_string(rng())}};
  const auto path = dir / "run.trace.safetensors";
  write_trace(path, {.events = &ev, .attention = spec, .metadata = meta, .inputs = &in});

  run_python("trace_numpy_check.py", path.string() + " " + (dir / "report.json").string());
  const nlohmann::json r = read_json(dir / "report.json");

  for (const auto& [k, v] : meta) EXPECT_EQ(r["metadata"][k], v) << k;
  EXPECT_EQ(r["metadata"]["dropped_events"], std::to_string(ev.dropped));
  EXPECT_EQ(r["metadata"]["tilescope_format"], "2");
  // The attention description, as JSON numpy's side reads.
  EXPECT_EQ(r["attention"]["heads_q"], spec.heads_q);
  EXPECT_EQ(r["attention"]["heads_kv"], spec.heads_kv);
  EXPECT_EQ(r["attention"]["seq_kv"], spec.seq_kv);
  EXPECT_EQ(r["attention"]["causal"], std::string(to_string(spec.causal)));
  const auto n = static_cast<int64_t>(ev.size());
  const auto& t = r["tensors"];
  // The file stores each event's first `rows` rows of the 32 the events were made with (compact).
  const int32_t rows = test::stored_rows_of(ev);
  const size_t sr = static_cast<size_t>(rows);
  std::vector<float> m, l, o;
  for (size_t i = 0; i < ev.size(); ++i) {
    m.insert(m.end(), ev.m.begin() + static_cast<ptrdiff_t>(i * 32), ev.m.begin() + static_cast<ptrdiff_t>(i * 32 + sr));
    l.insert(l.end(), ev.l.begin() + static_cast<ptrdiff_t>(i * 32), ev.l.begin() + static_cast<ptrdiff_t>(i * 32 + sr));
    o.insert(o.end(), ev.o.begin() + static_cast<ptrdiff_t>(i * 32 * 64),
             ev.o.begin() + static_cast<ptrdiff_t>((i * 32 + sr) * 64));
  }
  EXPECT_EQ(t["events.o"]["dtype"], "<f4");
  EXPECT_EQ(t["events.o"]["shape"], (std::vector<int64_t>{n, rows, 64}));
  EXPECT_EQ(t["events.o"]["sha256"], sha_of(o.data(), o.size() * 4));
  EXPECT_EQ(t["events.m"]["shape"], (std::vector<int64_t>{n, rows}));
  EXPECT_EQ(t["events.m"]["sha256"], sha_of(m.data(), m.size() * 4));
  EXPECT_EQ(t["events.l"]["sha256"], sha_of(l.data(), l.size() * 4));
  EXPECT_EQ(t["events.time_ns"]["dtype"], "<i8");
  EXPECT_EQ(t["events.stage"]["dtype"], "<i4");
  EXPECT_EQ(t["events.key_ranges"]["dtype"], "<i4");
  EXPECT_EQ(t["inputs.q_pairs"]["shape"], (std::vector<int64_t>{static_cast<int64_t>(in.q_pairs.size()), 2}));
  EXPECT_EQ(t["inputs.kv_pairs"]["shape"], (std::vector<int64_t>{1, 2}));
  if (dtype != DType::bf16) {  // the loader widens bf16 to float32
    EXPECT_EQ(t["inputs.k"]["sha256"], sha_of(in.k.bytes.data(), in.k.bytes.size()));
  }

  int64_t nans = 0;
  for (float x : o) nans += std::isnan(x);  // of the stored (compact) payload
  EXPECT_GT(nans, 0);
  EXPECT_EQ(r["nan_count_o"], nans);

  const auto expect_event = [&](const nlohmann::json& e, const EventHeader& h) {
    EXPECT_EQ(e["stage"], h.stage);
    EXPECT_EQ(e["stage_name"], ev.stages[static_cast<size_t>(h.stage)].name);
    EXPECT_EQ(e["stage_kind"], std::string(to_string(ev.stages[static_cast<size_t>(h.stage)].kind)));
    EXPECT_EQ(e["convention"], h.convention);
    EXPECT_EQ(e["batch"], h.batch);
    EXPECT_EQ(e["head"], h.head);
    EXPECT_EQ(e["kv_head"], h.kv_head);
    EXPECT_EQ(e["q_begin"], h.q_begin);
    EXPECT_EQ(e["rows"], h.rows);
    EXPECT_EQ(e["split"], h.split);
    EXPECT_EQ(e["step"], h.step);
    EXPECT_EQ(e["block"], h.block);
    EXPECT_EQ(e["where"], h.where);
    EXPECT_EQ(e["num_key_ranges"], h.num_key_ranges);
    std::vector<std::vector<int32_t>> keys;
    for (int32_t k = 0; k < h.num_key_ranges; ++k) keys.push_back({h.keys[k].begin, h.keys[k].end});
    EXPECT_EQ(e["keys"], keys);
    EXPECT_EQ(e["time_ns"].get<int64_t>(), static_cast<int64_t>(h.time_ns));
  };
  ASSERT_EQ(r["events"].size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    const auto& e = r["events"][i];
    expect_event(e, ev.headers[i]);
    EXPECT_EQ(e["m_bits"], bits_of(&ev.m[i * 32], sr));
    EXPECT_EQ(e["l_bits"], bits_of(&ev.l[i * 32], sr));
    if (rows > 0) {
      EXPECT_EQ(e["o_last_row_bits"], bits_of(&ev.o[(i * 32 + sr - 1) * 64], 64));
    }
  }
  ASSERT_EQ(r["missing"].size(), ev.missing.size());
  for (size_t i = 0; i < ev.missing.size(); ++i) {
    SCOPED_TRACE("missing event " + std::to_string(i));
    expect_event(r["missing"][i], ev.missing[i]);
  }
  // Q as float32 as numpy sees it (bf16 widened by the loader) equals our conversion.
  std::vector<float> q16(16);
  for (int64_t i = 0; i < 16 && i < in.q.numel(); ++i) q16[static_cast<size_t>(i)] = in.q.get_float(i);
  q16.resize(static_cast<size_t>(std::min<int64_t>(16, in.q.numel())));
  EXPECT_EQ(r["picks"]["inputs.q"], bits_of(q16.data(), q16.size()));
  EXPECT_NE(r["safetensors_numpy"], "different");
}

TEST(PythonInterop, NpyRoundTripsThroughNumpy) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  struct Written {
    std::string name;
    ElemType type;
    std::vector<int64_t> shape;
    std::vector<std::byte> bytes;
  };
  std::vector<Written> written;
  for (ElemType type : {ElemType::F16, ElemType::F32, ElemType::F64, ElemType::I32, ElemType::I64,
                        ElemType::U8, ElemType::BOOL, ElemType::I16, ElemType::U64}) {
    std::vector<int64_t> shape = {2 + static_cast<int64_t>(rng() % 5), 1 + static_cast<int64_t>(rng() % 9)};
    Written w{"c_" + std::string(to_string(type)) + ".npy", type, shape, {}};
    w.bytes.resize(static_cast<size_t>(shape[0] * shape[1]) * elem_size(type));
    for (auto& b : w.bytes) b = static_cast<std::byte>(type == ElemType::BOOL ? rng() & 1 : rng());
    write_npy(dir / w.name, type, shape, w.bytes.data());
    written.push_back(std::move(w));
  }
  const uint64_t seed = rng() % 100000;
  run_python("npy_interop.py", dir.path().string() + " " + std::to_string(seed));
  const nlohmann::json r = read_json(dir / "report.json");
  for (const Written& w : written) {
    SCOPED_TRACE(w.name);
    EXPECT_EQ(r[w.name]["dtype"], npy_descr(w.type));
    EXPECT_EQ(r[w.name]["shape"], w.shape);
    EXPECT_EQ(r[w.name]["sha256"], sha_of(w.bytes.data(), w.bytes.size()));
    // numpy reversed the rows; read its file and compare row by row.
    const NpyArray rev = read_npy(dir / ("py_rev_" + w.name.substr(2)));
    ASSERT_EQ(rev.type, w.type);
    ASSERT_EQ(rev.shape, w.shape);
    const size_t row = static_cast<size_t>(w.shape[1]) * elem_size(w.type);
    const auto rows = static_cast<size_t>(w.shape[0]);
    for (size_t i = 0; i < rows; ++i)
      EXPECT_EQ(std::memcmp(&rev.bytes[i * row], &w.bytes[(rows - 1 - i) * row], row), 0) << i;
  }
  // Arrays numpy made from the formula; every dtype and header version we support.
  std::vector<double> x(24);
  for (size_t i = 0; i < 24; ++i) x[i] = static_cast<double>((i * 7919 + seed) % 2003) / 16.0 - 60.0;
  const auto as_double = [](const NpyArray& a, size_t i) -> double {
    switch (a.type) {
      case ElemType::F32: return reinterpret_cast<const float*>(a.bytes.data())[i];
      case ElemType::F64: return reinterpret_cast<const double*>(a.bytes.data())[i];
      case ElemType::I32: return reinterpret_cast<const int32_t*>(a.bytes.data())[i];
      case ElemType::I64: return static_cast<double>(reinterpret_cast<const int64_t*>(a.bytes.data())[i]);
      case ElemType::U8: return static_cast<double>(std::to_integer<uint8_t>(a.bytes[i]));
      case ElemType::BOOL: return static_cast<double>(std::to_integer<uint8_t>(a.bytes[i]));
      default: return -1e300;
    }
  };
  for (const auto& [name, type] : {std::pair{"py_f4.npy", ElemType::F32}, std::pair{"py_f8.npy", ElemType::F64},
                                   std::pair{"py_v2.npy", ElemType::F32}, std::pair{"py_v3.npy", ElemType::F32}}) {
    SCOPED_TRACE(name);
    const NpyArray a = read_npy(dir / name);
    ASSERT_EQ(a.type, type);
    ASSERT_EQ(a.shape, (std::vector<int64_t>{2, 3, 4}));
    for (size_t i = 0; i < 24; ++i) EXPECT_EQ(as_double(a, i), x[i]) << i;  // exact in f32 too
  }
  for (const auto& [name, type] : {std::pair{"py_i4.npy", ElemType::I32}, std::pair{"py_i8.npy", ElemType::I64}}) {
    const NpyArray a = read_npy(dir / name);
    ASSERT_EQ(a.type, type);
    for (size_t i = 0; i < 24; ++i) EXPECT_EQ(as_double(a, i), x[i] * 16) << name << i;
  }
  const NpyArray u1 = read_npy(dir / "py_u1.npy");
  const NpyArray b1 = read_npy(dir / "py_b1.npy");
  ASSERT_EQ(u1.type, ElemType::U8);
  ASSERT_EQ(b1.type, ElemType::BOOL);
  for (size_t i = 0; i < 24; ++i) {
    EXPECT_EQ(as_double(u1, i), static_cast<double>(static_cast<uint8_t>(static_cast<int64_t>(x[i] * 16))));
    EXPECT_EQ(as_double(b1, i), x[i] > 0 ? 1.0 : 0.0);
  }
  const HostTensor h = load_tensor_file(dir / "py_f2.npy");
  EXPECT_EQ(h.dtype, DType::f16);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(h.get_float(i), static_cast<float>(x[static_cast<size_t>(i)]));

  const auto refused = [&](const char* name, const std::string& what) {
    try {
      read_npy(dir / name);
      ADD_FAILURE() << name << " accepted";
    } catch (const NpyFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused("bad_fortran.npy", "Fortran order");
  refused("bad_bigendian.npy", "big-endian");
  refused("bad_complex.npy", "unsupported dtype '<c8'");
}

}  // namespace
}  // namespace ts
