// `tilescope capture --inputs`: Q, K, V from .npy and .safetensors files written here from
// random values give the same trace as the same values launched in memory, and the trace
// records the files and their SHA-256.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "app/model/capture/capture_metadata.h"
#include "app/model/capture/run_capture.h"
#include "app/model/trace_session.h"
#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/tensor_files.h"
#include "base/random_inputs.h"
#include "tests/cli/cli_runner.h"
#include "tests/model/capture_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::CliRun;
using test::run_tilescope;

void write_npy_tensor(const std::filesystem::path& p, const HostTensor& t) {
  write_npy(p, elem_type_of_dtype(t.dtype), t.shape, t.bytes.data());
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Captures from the files and checks the trace against an in-process launch of `in`.
void expect_same_as_in_memory(const AttentionConfig& c, const AttentionInputs& in,
                              const std::vector<std::filesystem::path>& files,
                              const std::filesystem::path& dir) {
  std::vector<std::string> args = with(test::capture_args(c), {"--backend", "cpu", "--inputs"});
  for (const auto& f : files) args.push_back(f.string());
  const auto out = dir / "from_files.trace.safetensors";
  args.insert(args.end(), {"-o", out.string()});
  const CliRun r = run_tilescope(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunView trace = open_run(out);

  LaunchRequest req;
  req.config = c;
  req.backend = Backend::cpu;
  req.trace.enabled = true;
  const RunView mine = test::launch_view(req, in);
  EXPECT_EQ(test::run_events_difference(mine, trace), "");
  ASSERT_TRUE(trace.output && mine.output);
  EXPECT_TRUE(test::same_bytes(*trace.output, *mine.output));
  EXPECT_TRUE(test::same_bytes(trace.inputs.q, mine.inputs.q));
  EXPECT_TRUE(test::same_bytes(trace.inputs.k, mine.inputs.k));
  EXPECT_TRUE(test::same_bytes(trace.inputs.v, mine.inputs.v));

  const auto names = nlohmann::json::parse(trace.metadata.at("inputs_files"));
  const auto hashes = nlohmann::json::parse(trace.metadata.at("inputs_sha256"));
  ASSERT_EQ(names.size(), files.size());
  ASSERT_EQ(hashes.size(), files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(names[i], files[i].string());
    EXPECT_EQ(hashes[i], sha256_file(files[i]));
  }
  EXPECT_FALSE(trace.metadata.contains("inputs_seed"));
}

AttentionConfig config_for(DType dtype, KernelKind kernel) {
  AttentionConfig c;
  c.kernel = kernel;
  c.dtype = dtype;
  c.batch = 2;
  c.heads = 2;
  c.seq_q = kernel == KernelKind::splitk ? 3 : 50;
  c.seq_kv = 140;
  c.head_dim = 32;
  c.causal = kernel == KernelKind::fa1;
  c.num_splits = kernel == KernelKind::splitk ? 2 : 0;
  return c;
}

TEST(CliInputs, ThreeNpyFilesEqualTheSameValuesInMemory) {
  TS_SEEDED(seed);
  test::TempDir dir;
  for (DType dtype : {DType::f32, DType::f16}) {
    const AttentionConfig c = config_for(dtype, dtype == DType::f32 ? KernelKind::fa1 : KernelKind::splitk);
    const AttentionInputs in =
        make_random_inputs(c, {.seed = seed + static_cast<uint64_t>(dtype),
                               .distribution = InputDistribution::uniform, .scale = 1.5});
    const auto q = dir.path() / "q.npy", k = dir.path() / "k.npy", v = dir.path() / "v.npy";
    write_npy_tensor(q, in.q);
    write_npy_tensor(k, in.k);
    write_npy_tensor(v, in.v);
    expect_same_as_in_memory(c, in, {q, k, v}, dir.path());
  }
}

TEST(CliInputs, ATraceOfFilesWithoutTheirValuesSaysWhyItCannotBeAnalysed) {
  // Was: diff told a --no-store-inputs trace to "capture it with its inputs (a trace keeps the
  // inputs of the heads it traces)", with the files beside it and no word of why.
  TS_SEEDED(seed);
  test::TempDir dir;
  const AttentionConfig c = config_for(DType::f32, KernelKind::fa1);
  const AttentionInputs in = make_random_inputs(c, {.seed = seed});
  const auto q = dir.path() / "q.npy", k = dir.path() / "k.npy", v = dir.path() / "v.npy";
  write_npy_tensor(q, in.q);
  write_npy_tensor(k, in.k);
  write_npy_tensor(v, in.v);
  const auto out = dir.path() / "names_only.trace.safetensors";
  const CliRun cap = run_tilescope(with(test::capture_args(c), {"--backend", "cpu", "--no-store-inputs", "--inputs",
                                                                q.string(), k.string(), v.string(), "-o", out.string()}),
                                   dir.path());
  ASSERT_EQ(cap.exit_code, 0) << cap.err;
  EXPECT_EQ(open_run(out).metadata.at(std::string(capture_meta::inputs_stored)), "none");
  for (const char* command : {"diff", "export"}) {
    std::vector<std::string> args{command, out.string()};
    if (std::string(command) == "export") args.insert(args.end(), {"-o", (dir.path() / "export").string()});
    const CliRun r = run_tilescope(args, dir.path());
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("--no-store-inputs"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("does not read those files back"), std::string::npos) << r.err;
  }
}

TEST(CliInputs, OneSafetensorsFileWithQkvEqualsTheSameValuesInMemory) {
  TS_SEEDED(seed);
  test::TempDir dir;
  for (DType dtype : {DType::bf16, DType::f16, DType::f32}) {
    const AttentionConfig c = config_for(dtype, dtype == DType::f16 ? KernelKind::fa1 : KernelKind::splitk);
    const AttentionInputs in = make_random_inputs(c, {.seed = seed ^ static_cast<uint64_t>(dtype)});
    const auto file = dir.path() / "qkv.safetensors";
    // An extra tensor and a different order: the names select q, k and v.
    const HostTensor extra = in.q;
    const std::vector<TensorToWrite> tensors{tensor_to_write("v", in.v), tensor_to_write("k", in.k),
                                             tensor_to_write("q", in.q),
                                             tensor_to_write("unused", extra)};
    write_safetensors(file, tensors, {});
    expect_same_as_in_memory(c, in, {file}, dir.path());
  }
}

TEST(CliInputs, ThreeSingleTensorSafetensorsFiles) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const AttentionConfig c = config_for(DType::bf16, KernelKind::fa1);
  const AttentionInputs in = make_random_inputs(c, {.seed = seed});
  std::vector<std::filesystem::path> files;
  const HostTensor* ts[3] = {&in.q, &in.k, &in.v};
  for (int i = 0; i < 3; ++i) {
    files.push_back(dir.path() / ("t" + std::to_string(i) + ".safetensors"));
    const std::vector<TensorToWrite> one{tensor_to_write("x", *ts[i])};
    write_safetensors(files.back(), one, {});
  }
  expect_same_as_in_memory(c, in, files, dir.path());
}

}  // namespace
}  // namespace ts
