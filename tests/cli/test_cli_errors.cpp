// Bad usage and bad input through the real binary: each gives exit code 2 and a message that
// names the problem, never a crash, and leaves no output file; a missing GPU gives 3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "instrumentation/trace/host_tensor_entry.h"
#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/tensor_files.h"
#include "instrumentation/trace/trace_file.h"
#include "kernels/launcher.h"
#include "base/kernel_list.h"
#include "base/random_inputs.h"
#include "tests/cli/cli_runner.h"
#include "tests/model/capture_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::CliRun;
using test::run_tilescope;

// A small valid capture command line; `extra` options are appended (later ones win in CLI11
// for single-value options, so they can override).
std::vector<std::string> small_capture(const std::filesystem::path& out,
                                       std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"capture", "--backend", "cpu", "--seq-q", "20", "--seq-kv", "30",
                                "--head-dim", "32", "-o", out.string()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Runs and checks: exit 2, the message names the problem, nothing crashed, no file written.
void expect_bad_input(const std::vector<std::string>& args, const std::string& message,
                      const std::filesystem::path& dir, const std::filesystem::path& out) {
  std::string shown;
  for (const auto& a : args) shown += a + " ";
  SCOPED_TRACE(shown);
  const CliRun r = run_tilescope(args, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Sanitizer"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  // Nothing else left in the folder either (no temporary file).
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_NE(e.path().filename().string().rfind(".", 0), 0u) << e.path();
}

// --kernel, --dtype and --head-dim follow the kernels' one list (base/kernel_list.h, from
// kernels/kernel_list.cmake): every listed build captures, everything else is refused naming the
// field, and the help shows each kernel with what it is built for.
TEST(CliErrors, KernelDtypeAndHeadDimFollowTheKernelList) {
  test::TempDir dir;
  const auto out = dir.path() / "x.trace.safetensors";
  size_t captured = 0;
  for (KernelKind kernel : built_kernels())
    for (DType dtype : kAllDTypes)
      for (int head_dim : {16, 32, 48, 64, 128, 256, 512}) {
        const std::vector<std::string> args =
            small_capture(out, {"--kernel", std::string(to_string(kernel)), "--dtype", std::string(to_string(dtype)),
                                "--head-dim", std::to_string(head_dim)});
        if (!is_built(kernel, dtype, head_dim)) {
          const std::vector<int> any = built_head_dims();
          const bool any_kernel = std::find(any.begin(), any.end(), head_dim) != any.end();
          expect_bad_input(args, any_kernel ? "the " + std::string(to_string(kernel)) + " kernel is built for"
                                            : "head_dim must be one of",
                           dir.path(), out);
          continue;
        }
        const CliRun r = run_tilescope(args, dir.path());
        EXPECT_EQ(r.exit_code, 0) << to_string(kernel) << " " << to_string(dtype) << " " << head_dim << ": " << r.err;
        EXPECT_TRUE(std::filesystem::exists(out));
        std::filesystem::remove(out);
        ++captured;
      }
  EXPECT_EQ(captured, kernel_builds().size()) << "every build is probed";

  const CliRun help = run_tilescope({"capture", "--help"}, dir.path());
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (KernelKind k : built_kernels()) EXPECT_NE(help.out.find(kernel_choice_label(k)), std::string::npos) << help.out;
  for (int d : built_head_dims()) EXPECT_NE(help.out.find(std::to_string(d)), std::string::npos) << help.out;
}

TEST(CliErrors, EachInvalidConfigFieldIsNamed) {
  test::TempDir dir;
  const auto out = dir.path() / "x.trace.safetensors";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--batch", "0"}, "batch must be at least 1"},
      {{"--heads=-2"}, "heads must be at least 1"},
      {{"--seq-q", "0"}, "seq_q must be at least 1"},
      {{"--seq-kv", "0"}, "seq_kv must be at least 1"},
      {{"--head-dim", "48"}, "head_dim must be one of"},
      {{"--head-dim", "48"}, " or " + std::to_string(built_head_dims().back()) + " (got 48)"},  // a choice: "or"
      {{"--kernel", "splitk", "--splits=-1"}, "num_splits must be at least 1"},
      {{"--kernel", "splitk", "--splits", "5000"}, "num_splits must be at most"},
      {{"--kernel", "fa1", "--splits", "4"}, "num_splits applies to the splitk and splitk2 kernels only"},
      {{"--scale=-1"}, "softmax_scale must be 0"},
      {{"--scale", "inf"}, "softmax_scale must be 0"},
      {{"--scale", "1e39"}, "finite positive float32 (got 1e+39)"},
      {{"--scale", "1e-300"}, "finite positive float32 (got 1e-300)"},
      // The value as given, never JSON's null for a non-finite number.
      {{"--softcap", "inf"}, "finite positive float32 (got inf)"},
      {{"--softcap", "nan"}, "finite positive float32 (got nan)"},
      {{"--softcap", "1e39"}, "finite positive float32 (got 1e+39)"},
      {{"--kernel", "splitk", "--fault", "per_tile_softmax"}, "does not apply to the splitk kernel"},
      {{"--kernel", "fa1", "--fault", "double_count_l"}, "does not apply to the fa1 kernel"},
      {{"--batch", "60000", "--heads", "60000", "--seq-q", "1000"}, "more than 2^31-1 elements"},
      {{"--fault", "no_such_fault"}, "--fault"},
      {{"--kernel", "fa3"}, "--kernel"},
      // fa2 runs on tensor cores (16-bit inputs), instantiated for head dims 64 and 128; the race
      // of missing_barrier cannot show on the CPU runtime's cp.async.
      {{"--kernel", "fa2", "--dtype", "fp32"}, "tensor cores, which take 16-bit inputs"},
      {{"--kernel", "fa2", "--dtype", "bf16", "--head-dim", "32"}, "head_dim 64 and 128 only"},
      {{"--kernel", "fa2", "--dtype", "fp16", "--fault", "missing_barrier"}, "the race could not show"},
      {{"--kernel", "fa2", "--dtype", "bf16", "--fault", "double_count_l"}, "does not apply to the fa2 kernel"},
      {{"--kernel", "fa1", "--fault", "fragment_rows"}, "does not apply to the fa1 kernel"},
      {{"--kernel", "fa2", "--dtype", "bf16", "--splits", "2"}, "num_splits applies to the splitk and splitk2 kernels only"},
      {{"--dtype", "fp64"}, "--dtype"},
      {{"--backend", "tpu"}, "--backend"},
      {{"--batch", "two"}, "--batch"},
      // A trace buffer of no events records nothing and calls every event dropped.
      {{"--capacity", "0"}, "--capacity takes a number of events >= 1 (got 0); --no-trace records none"},
      {{"--input-scale", "0"}, "scale must be finite and > 0"},
      {{"--distribution", "cauchy"}, "--distribution"},
      {{"--preset", "spiky"}, "--preset"},
  };
  for (const auto& [extra, message] : cases) expect_bad_input(small_capture(out, extra), message, dir.path(), out);
}

TEST(CliErrors, BadTraceRequestsAndUsage) {
  test::TempDir dir;
  const auto out = dir.path() / "x.trace.safetensors";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--trace-batch", "5:6"}, "keeps nothing: the run has 1 batch entry (0..0)"},
      {{"--trace-head", "3:4"}, "keeps nothing: the run has 1 head (0..0)"},
      {{"--heads", "2", "--trace-head", "3:4"}, "keeps nothing: the run has 2 heads (0..1)"},
      {{"--trace-head", "3:1"}, "'3:1' is empty"},
      {{"--trace-queries", "x"}, "'x' is not an index range"},
      {{"--trace-queries", "70:"}, "queries"},
      {{"--trace-queries", "0:2147483648"}, "is too large"},
      {{"--trace-batch", "99999999999:"}, "'99999999999:' is too large"},
      {{"--trace-queries", ":99999999999999999999"}, "is too large"},
      {{"--trace-head", "-99999999999999999999:2"}, "is negative"},
      {{"--trace-queries", "9223372036854775807"}, "is too large"},
      // In range, yet no event: rows that see no key have no steps; tile events off.
      {{"--causal", "--seq-q", "100", "--seq-kv", "30", "--stages", "fa1.step", "--trace-queries", "0:64"},
       "the trace filters keep no event of this run: the stages traced (fa1.step)"},
      {{"--kernel", "splitk", "--stages", "splitk.tile", "--tile-events", "off"}, "(tile events are off)"},
      {{"--kernel", "splitk", "--stages", "fa1.step"}, "unknown stage 'fa1.step' (this kernel's stages: splitk.tile"},
      {{"--stages", "fa1.step,bogus"}, "unknown stage 'bogus'"},
      {{"--stages", ""}, "no stage named in the stage list '' (this kernel's stages: fa1.step, final)"},
      {{"--stages", " , "}, "no stage named in the stage list ' , '"},
      {{"--stages", "fa1.step,,final"}, "an empty stage name in the stage list 'fa1.step,,final'"},
      {{"--capacity=-1"}, "--capacity takes a number of events >= 1 (got -1)"},
      {{"--workers=-1"}, "--workers"},
      {{"--backend", "gpu", "--perturb-seed", "3"}, "--perturb-seed"},
      {{"--seed", "1", "--inputs", "a.npy", "b.npy", "c.npy"}, "excludes"},
      {{"--no-such-option"}, "no-such-option"},
  };
  for (const auto& [extra, message] : cases) expect_bad_input(small_capture(out, extra), message, dir.path(), out);
  expect_bad_input({"capture", "--backend", "cpu"}, "--output", dir.path(), out);
  expect_bad_input({}, "give a command", dir.path(), out);
  expect_bad_input({"frobnicate"}, "frobnicate", dir.path(), out);
}

// The model's checks name a field in neutral words; the CLI names the option that sets it.
TEST(CliErrors, EachProblemNamesItsOption) {
  test::TempDir dir;
  const auto out = dir.path() / "x.trace.safetensors";
  std::ofstream(dir.path() / "a.npy") << "x";
  const std::string a = (dir.path() / "a.npy").string(), missing = (dir.path() / "missing.npy").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--trace-batch", "5:6"}, "--trace-batch"},
      {{"--trace-head", "3:1"}, "--trace-head"},
      {{"--trace-queries", "x"}, "--trace-queries"},
      {{"--trace-queries", "20:"}, "--trace-queries"},
      {{"--kernel", "splitk", "--stages", "fa1.step"}, "--stages"},
      {{"--workers=-1"}, "--workers"},
      {{"--workers", "1025"}, "--workers"},
      {{"--backend", "gpu", "--perturb-seed", "3"}, "--perturb-seed"},
      {{"--input-scale", "0"}, "--input-scale"},
      {{"--inputs", a, a}, "--inputs"},
      {{"--inputs", a, missing, a}, "--inputs"},
      {{"--seq-q", "0"}, "--seq-q"},
      {{"--heads", "4", "--heads-kv", "3"}, "--heads-kv"},
      {{"--window", "2000000000,0"}, "--window"},
      {{"--softcap=-1"}, "--softcap"},
      {{"--kernel", "splitk", "--fault", "per_tile_softmax"}, "--fault or --kernel"},
      {{"--batch", "60000", "--heads", "60000", "--seq-q", "1000"}, "--batch, --heads, --seq-q or --head-dim"},
  };
  for (const auto& [extra, option] : cases) expect_bad_input(small_capture(out, extra), "(fix " + option + ")\n", dir.path(), out);
}

TEST(CliErrors, BadInputFilesAreNamed) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto out = dir.path() / "x.trace.safetensors";
  AttentionConfig c;
  c.seq_q = 20;
  c.seq_kv = 30;
  c.head_dim = 32;
  AttentionInputs in = make_random_inputs(c, {.seed = seed});
  const auto q = dir.path() / "q.npy", k = dir.path() / "k.npy", v = dir.path() / "v.npy";
  auto write = [](const std::filesystem::path& p, const HostTensor& t) {
    write_npy(p, elem_type_of_dtype(t.dtype), t.shape, t.bytes.data());
  };
  write(q, in.q);
  write(k, in.k);
  write(v, in.v);
  auto with_dtype = [](std::vector<std::string> a) {
    a.insert(a.end(), {"--dtype", "fp16"});
    return a;
  };
  auto files = [&](std::vector<std::string> names) {
    std::vector<std::string> a{"--inputs"};
    for (auto& n : names) a.push_back((dir.path() / n).string());
    return small_capture(out, a);
  };
  // The good files work (so the failures below are the files' own).
  ASSERT_EQ(run_tilescope(files({"q.npy", "k.npy", "v.npy"}), dir.path()).exit_code, 0);
  std::filesystem::remove(out);

  expect_bad_input(files({"q.npy", "missing.npy", "v.npy"}), "missing.npy", dir.path(), out);
  expect_bad_input(files({"q.npy", "k.npy"}), "got 2 files", dir.path(), out);
  expect_bad_input(files({"q.npy"}), "one input file must be a .safetensors", dir.path(), out);
  // Shape: K in Q's place.
  expect_bad_input(files({"k.npy", "k.npy", "v.npy"}), "has shape", dir.path(), out);
  // Dtype: fp32 files for an fp16 config.
  expect_bad_input(with_dtype(files({"q.npy", "k.npy", "v.npy"})), "dtype", dir.path(), out);
  // NaN in V at a random place, Inf in K.
  HostTensor bad_v = in.v;
  const int64_t where = static_cast<int64_t>(seed % static_cast<uint64_t>(bad_v.numel()));
  bad_v.set_float(where, std::numeric_limits<float>::quiet_NaN());
  write(dir.path() / "nan_v.npy", bad_v);
  expect_bad_input(files({"q.npy", "k.npy", "nan_v.npy"}), "NaN", dir.path(), out);
  HostTensor bad_k = in.k;
  bad_k.set_float(bad_k.numel() - 1, -std::numeric_limits<float>::infinity());
  write(dir.path() / "inf_k.npy", bad_k);
  expect_bad_input(files({"q.npy", "inf_k.npy", "v.npy"}), "inf_k.npy", dir.path(), out);
  // A .safetensors of several tensors as one of three files: the command line cannot name one,
  // so the message says what each file must hold (it said "name the one to use").
  const std::vector<TensorToWrite> qk{tensor_to_write("q", in.q), tensor_to_write("k", in.k)};
  write_safetensors(dir.path() / "qk.safetensors", qk, {});
  const auto three = files({"qk.safetensors", "k.npy", "v.npy"});
  expect_bad_input(three, "qk.safetensors: holds 2 tensors (k, q); each of three input files must hold one", dir.path(),
                   out);
  EXPECT_EQ(run_tilescope(three, dir.path()).err.find("name the one to use"), std::string::npos);
  // Not a tensor file at all.
  std::ofstream(dir.path() / "junk.npy") << "this is not an array";
  expect_bad_input(files({"junk.npy", "k.npy", "v.npy"}), "junk.npy", dir.path(), out);
}

TEST(CliErrors, UnwritableOutputLeavesNoFile) {
  test::TempDir dir;
  const auto regular = dir.path() / "plain.txt";
  std::ofstream(regular) << "x";
  const auto in_missing = dir.path() / "no" / "such" / "folder" / "x.trace.safetensors";
  const CliRun a = run_tilescope(small_capture(in_missing), dir.path());
  EXPECT_EQ(a.exit_code, 2) << a.err;
  EXPECT_NE(a.err.find("does not exist"), std::string::npos) << a.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "no"));

  const CliRun b = run_tilescope(small_capture(regular / "x.trace.safetensors"), dir.path());
  EXPECT_EQ(b.exit_code, 2) << b.err;
  EXPECT_NE(b.err.find("not a folder"), std::string::npos) << b.err;

  const auto folder = dir.path() / "a_folder";
  std::filesystem::create_directory(folder);
  const CliRun c = run_tilescope(small_capture(folder), dir.path());
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_NE(c.err.find("is a folder"), std::string::npos) << c.err;
  EXPECT_TRUE(std::filesystem::is_empty(folder));
}

TEST(CliErrors, InfoRefusesDamagedTraces) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto good = dir.path() / "good.trace.safetensors";
  ASSERT_EQ(run_tilescope(small_capture(good, {"--seed", std::to_string(seed)}), dir.path()).exit_code, 0);
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto write_bytes = [&](const std::string& name, const std::string& content) {
    const auto p = dir.path() / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  };
  auto expect_refused = [&](const std::string& path, const std::string& message) {
    SCOPED_TRACE(path);
    const CliRun r = run_tilescope({"info", path}, dir.path());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  };
  expect_refused(write_bytes("truncated.trace.safetensors", bytes.substr(0, bytes.size() * 2 / 3)),
                 "truncated.trace.safetensors");
  expect_refused(write_bytes("empty.trace.safetensors", ""), "empty.trace.safetensors");
  std::mt19937_64 rng(seed);
  std::string noise(4096, '\0');
  for (char& ch : noise) ch = static_cast<char>(rng());
  expect_refused(write_bytes("noise.trace.safetensors", noise), "noise.trace.safetensors");
  expect_refused((dir.path() / "absent.trace.safetensors").string(), "absent.trace.safetensors");
  expect_refused(dir.path().string(), dir.path().filename().string());

  // A valid safetensors file that is not a tilescope capture; a trace whose config was damaged.
  const float x[4] = {1, 2, 3, 4};
  const std::vector<int64_t> shape{4};
  const std::vector<TensorToWrite> one{{"x", ElemType::F32, shape, x}};
  write_safetensors(dir.path() / "other.safetensors", one, {});
  expect_refused((dir.path() / "other.safetensors").string(), "other.safetensors");

  const TraceFile trace = TraceFile::open(good);
  CapturedEvents events = trace.to_captured_events();
  auto meta = trace.metadata();
  for (const char* key : {"tilescope_format", "max_rows", "head_dim", "dropped_events", "requested_events",
                          "stages", "attention"})
    meta.erase(key);
  auto rewrite = [&](const std::string& name, std::map<std::string, std::string> m) {
    const auto p = dir.path() / name;
    write_trace(p, {.events = &events, .attention = trace.attention(), .metadata = std::move(m)});
    return p.string();
  };
  auto bad_json = meta;
  bad_json["config"] = "{\"kernel\": ";
  expect_refused(rewrite("bad_json.trace.safetensors", bad_json), "'config' is invalid");
  auto bad_field = meta;
  auto cj = nlohmann::json::parse(meta.at("config"));
  cj["head_dim"] = 48;
  bad_field["config"] = cj.dump();
  expect_refused(rewrite("bad_field.trace.safetensors", bad_field), "head_dim");
  auto bad_tiling = meta;
  auto tj = nlohmann::json::parse(meta.at("tiling"));
  tj["seq_q"] = tj["seq_q"].get<int64_t>() + 64;
  tj["num_q_tiles"] = tj["num_q_tiles"].get<int64_t>() + 1;
  bad_tiling["tiling"] = tj.dump();
  expect_refused(rewrite("bad_tiling.trace.safetensors", bad_tiling), "tiling");
}

TEST(CliErrors, GpuBackendWithoutADeviceExitsThree) {
  std::string why;
  if (gpu_available(&why)) GTEST_SKIP() << "a GPU is present here";
  test::TempDir dir;
  const auto out = dir.path() / "gpu.trace.safetensors";
  const CliRun r = run_tilescope(small_capture(out, {"--backend", "gpu"}), dir.path());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(r.err.find("no CUDA device") != std::string::npos ||
              r.err.find("built without CUDA") != std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--backend cpu"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace ts
