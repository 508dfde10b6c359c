// Compact traces: random inputs recorded as their generator's spec and SHA-256 and
// re-made when the trace is opened, and event payloads of as many rows as the events hold.
// - the re-made inputs are bit for bit the ones the kernels ran on, for every dtype, preset and
//   distribution, for a subset of heads too, and equal make_random_inputs' slices;
// - a compact trace and the same capture with --store-inputs open as the same run and are
//   analysed into the same report;
// - a changed seed, spec, hash or generator name is refused with an error naming the file and
//   what differs, and a damaged recipe names its key;
// - the generator's plain and vector loops give the same bits (TILESCOPE_NO_AVX2), and numpy
//   re-makes the same bits from the metadata alone (tests/trace/random_inputs_numpy.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/report_json.h"
#include "app/model/capture/run_capture.h"
#include "app/model/generated_inputs.h"
#include "app/model/trace_session.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/trace_file.h"
#include "tests/model/capture_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

CaptureSpec decode_like(std::mt19937_64& rng, DType dtype) {
  CaptureSpec spec;
  spec.config.kernel = KernelKind::splitk;
  spec.config.batch = 2;
  spec.config.heads = 3;
  spec.config.seq_q = 1 + static_cast<int64_t>(rng() % 3);
  spec.config.seq_kv = 300 + static_cast<int64_t>(rng() % 200);
  spec.config.head_dim = 64;
  spec.config.num_splits = 4;
  spec.config.dtype = dtype;
  spec.backend = Backend::cpu;
  spec.cpu_workers = 2;
  RandomInputSpec r;
  r.seed = rng();
  r.distribution = rng() % 2 ? InputDistribution::normal : InputDistribution::uniform;
  r.scale = 0.5 + static_cast<double>(rng() % 4) * 0.25;
  r.preset = static_cast<InputPreset>(rng() % 3);
  spec.inputs = r;
  return spec;
}

// The trace's metadata with one value replaced, written back as a new file (the tensors as they
// were): what a person editing the header, or a damaged copy, would give.
void rewrite_metadata(const std::filesystem::path& from, const std::filesystem::path& to, const std::string& key,
                      const std::string& value) {
  const SafetensorsFile f = SafetensorsFile::open(from);
  std::map<std::string, std::string> meta = f.metadata();
  meta[key] = value;
  std::vector<TensorToWrite> tensors;
  for (const TensorInfo& t : f.tensors()) tensors.push_back({t.name, t.type, t.shape, f.bytes(t).data()});
  write_safetensors(to, tensors, meta);
}

TEST(CompactTrace, RemadeInputsAreTheCapturedOnesBitForBit) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    CaptureSpec spec = decode_like(rng, dtype);
    if (dtype == DType::f16) {  // a subset of heads: only their inputs are recorded and re-made
      spec.trace.filter.batch_begin = 1;
      spec.trace.filter.head_begin = 1;
      spec.trace.filter.head_end = 3;
    }
    SCOPED_TRACE(nlohmann::json(spec.config).dump());
    const CaptureResult r = run_capture(spec);
    EXPECT_FALSE(stores_inputs(r));
    const auto path = dir.path() / "compact.trace.safetensors";
    save_trace(r, path);
    const TraceFile file = TraceFile::open(path);
    EXPECT_FALSE(file.has_inputs()) << "no inputs.* tensors";
    ASSERT_NE(file.metadata_value(input_meta::generated), nullptr);

    const RunView opened = open_run(path);
    EXPECT_TRUE(inputs_are_remade(opened));
    EXPECT_EQ(opened.inputs.q_pairs, r.view.inputs.q_pairs);
    EXPECT_EQ(opened.inputs.kv_pairs, r.view.inputs.kv_pairs);
    EXPECT_TRUE(test::same_bytes(opened.inputs.q, r.view.inputs.q));
    EXPECT_TRUE(test::same_bytes(opened.inputs.k, r.view.inputs.k));
    EXPECT_TRUE(test::same_bytes(opened.inputs.v, r.view.inputs.v));
    // ... and they are make_random_inputs' slices.
    const HeadInputs direct = make_random_head_inputs(attention_spec(spec.config), std::get<RandomInputSpec>(spec.inputs),
                                                      r.view.inputs.q_pairs, r.view.inputs.kv_pairs);
    EXPECT_TRUE(test::same_bytes(direct.k, opened.inputs.k));
  }
}

TEST(CompactTrace, OpensAndAnalysesAsTheTraceThatStoresItsInputs) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  CaptureSpec spec = decode_like(rng, DType::bf16);
  spec.config.fault = Fault::double_count_l;
  const auto compact = dir.path() / "compact.trace.safetensors", stored = dir.path() / "stored.trace.safetensors";
  save_trace(run_capture(spec), compact);
  spec.store_inputs = true;
  const CaptureResult with_inputs = run_capture(spec);
  EXPECT_TRUE(stores_inputs(with_inputs));
  save_trace(with_inputs, stored);
  EXPECT_LT(std::filesystem::file_size(compact), std::filesystem::file_size(stored));

  const RunView a = open_run(compact), b = open_run(stored);
  EXPECT_TRUE(test::same_bytes(a.inputs.k, b.inputs.k));
  EXPECT_TRUE(test::same_bytes(a.inputs.v, b.inputs.v));
  EXPECT_EQ(test::run_events_difference(a, b), "");
  nlohmann::json ja = report_json(analyze_run(a)), jb = report_json(analyze_run(b));
  for (auto* j : {&ja, &jb}) j->erase("run");  // the file's name
  EXPECT_EQ(ja, jb);
  EXPECT_EQ(ja.at("verdict"), "divergence");
}

TEST(CompactTrace, PayloadsHoldTheRowsTheEventsHold) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  CaptureSpec spec = decode_like(rng, DType::f32);
  spec.config.kernel = KernelKind::fa1;  // 20 query rows in a query tile of 64
  spec.config.num_splits = 0;
  spec.config.seq_q = 20;
  const CaptureResult r = run_capture(spec);
  EXPECT_EQ(r.view.max_rows, 20);
  EXPECT_GT(r.view.tiling->block_m, 20);
  const auto path = dir.path() / "short.trace.safetensors";
  save_trace(r, path);
  const TraceFile t = TraceFile::open(path);
  EXPECT_EQ(t.max_rows(), 20);
  EXPECT_EQ(t.o_all().size(), t.num_events() * 20 * static_cast<size_t>(spec.config.head_dim));
}

TEST(CompactTrace, AChangedSeedHashSpecOrGeneratorIsRefused) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  CaptureSpec spec = decode_like(rng, DType::f16);
  const auto path = dir.path() / "compact.trace.safetensors", bad = dir.path() / "bad.trace.safetensors";
  save_trace(run_capture(spec), path);
  const std::map<std::string, std::string> meta = TraceFile::open(path).metadata();
  const nlohmann::json recipe = nlohmann::json::parse(meta.at("inputs_generated"));

  const auto refused = [&](const std::string& key, const std::string& value, const std::string& says) {
    SCOPED_TRACE(key + " = " + value);
    rewrite_metadata(path, bad, key, value);
    try {
      open_run(bad);
      ADD_FAILURE() << "opened";
    } catch (const TraceFormatError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(bad.string()), std::string::npos) << what;
      EXPECT_NE(what.find(says), std::string::npos) << what;
    }
  };
  refused("inputs_seed", std::to_string(std::get<RandomInputSpec>(spec.inputs).seed + 1), "SHA-256");
  refused("inputs_scale", "3.5", "SHA-256");
  refused("inputs_distribution", meta.at("inputs_distribution") == "normal" ? "uniform" : "normal", "SHA-256");
  nlohmann::json changed = recipe;
  std::string hash = changed["sha256"]["v"];
  hash[10] = hash[10] == '0' ? '1' : '0';
  changed["sha256"]["v"] = hash;
  refused("inputs_generated", changed.dump(), "inputs.v re-made from seed");
  changed = recipe;
  changed["generator"] = "tilescope-counter-99";
  refused("inputs_generated", changed.dump(), "tilescope-counter-99");
  changed = recipe;
  changed["sha256"]["k"] = "not a hash";
  refused("inputs_generated", changed.dump(), "64 lowercase hex digits");
  changed = recipe;
  changed["q_pairs"] = nlohmann::json::array({nlohmann::json::array({0, 99})});
  refused("inputs_generated", changed.dump(), "outside the attention");
  refused("inputs_preset", "sideways", "inputs_preset");
  refused("inputs_generated", "[1, 2", "JSON object");

  // Info opens it without re-making (and so without checking the hashes), and says so.
  OpenRunOptions no_inputs;
  no_inputs.remake_inputs = false;
  const RunView described = open_run(path, no_inputs);
  EXPECT_TRUE(described.inputs.q_pairs.empty());
}

// Runs `command` with the system's python3 (which has numpy); returns its exit status.
int system_python(const std::string& args) {
  const std::string cmd = std::string(TS_SYSTEM_PYTHON3) + " " + args;
  return std::system(cmd.c_str());
}

TEST(CompactTrace, NumpyRemakesTheInputsFromTheMetadataAlone) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    CaptureSpec spec = decode_like(rng, dtype);
    const CaptureResult r = run_capture(spec);
    const auto path = dir.path() / "compact.trace.safetensors", npz = dir.path() / "remade";
    save_trace(r, path);
    // The script checks the hashes itself (exit 1 when one differs) and saves what it re-made.
    ASSERT_EQ(system_python(std::string(TS_TRACE_TEST_DIR) + "/random_inputs_numpy.py " + path.string() + " " +
                            npz.string() + " > /dev/null"),
              0)
        << nlohmann::json(spec.config).dump();
  }
}

TEST(CompactTrace, PlainAndVectorLoopsOfTheGeneratorGiveTheSameBits) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (InputDistribution d : {InputDistribution::normal, InputDistribution::uniform}) {
    const RandomInputSpec r{.seed = rng(), .distribution = d, .scale = 1.25, .preset = InputPreset::large_logits};
    std::vector<float> wide(4099), plain(4099);
    random_input_values(r, InputTensor::k, 64, 100, 3, static_cast<int64_t>(wide.size()), wide.data());
    setenv("TILESCOPE_NO_AVX2", "1", 1);
    random_input_values(r, InputTensor::k, 64, 100, 3, static_cast<int64_t>(plain.size()), plain.data());
    unsetenv("TILESCOPE_NO_AVX2");
    EXPECT_EQ(std::memcmp(plain.data(), wide.data(), wide.size() * sizeof(float)), 0) << to_string(d);
  }
}

}  // namespace
}  // namespace ts
