// `tilescope capture --backend gpu` on a CUDA device (label gpu): the GPU trace has the same
// events, in the same order, as the CPU backend's trace of the same config and inputs, with
// payloads and output equal within float rounding; --backend auto picks the GPU.
//
//   Run on a GPU machine from the build folder:  ctest -L gpu -R cli_gpu --output-on-failure
//   (or tests/cli/test_cli_gpu directly; it finds ../../app/cli/tilescope beside it).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "app/model/trace_session.h"
#include "kernels/launcher.h"
#include "tests/cli/cli_runner.h"
#include "tests/model/capture_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::CliRun;
using test::run_tilescope;

bool close(float a, float b, float rel, float abs) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= abs + rel * std::fabs(b);
}

RunView capture(const AttentionConfig& c, const std::string& backend, uint64_t seed,
                const std::filesystem::path& dir) {
  std::vector<std::string> args = test::capture_args(c);
  const auto out = dir / (backend + ".trace.safetensors");
  args.insert(args.end(), {"--backend", backend, "--seed", std::to_string(seed), "-o", out.string()});
  const CliRun r = run_tilescope(args, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return open_run(out);
}

TEST(CliGpu, GpuTraceMatchesTheCpuTrace) {
  std::string why;
  ASSERT_TRUE(gpu_available(&why)) << why;
  TS_SEEDED(seed);
  test::TempDir dir;
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    AttentionConfig c;
    c.kernel = k;
    c.batch = 2;
    c.heads = 3;
    c.seq_q = k == KernelKind::fa1 ? 200 : 5;
    c.seq_kv = 700;
    c.head_dim = 64;
    c.dtype = k == KernelKind::fa1 ? DType::f16 : DType::bf16;
    c.causal = k == KernelKind::fa1;
    c.num_splits = splits_kv(k) ? 4 : 0;  // explicit: the same tiling on both
    SCOPED_TRACE(nlohmann::json(c).dump());
    const RunView gpu = capture(c, "gpu", seed, dir.path());
    const RunView cpu = capture(c, "cpu", seed, dir.path());
    EXPECT_EQ(gpu.metadata.at("backend"), "gpu");
    EXPECT_EQ(gpu.metadata.at("device").find("CPU"), std::string::npos);
    EXPECT_EQ(gpu.tiling, cpu.tiling);
    ASSERT_EQ(gpu.num_events(), cpu.num_events());
    for (size_t i = 0; i < gpu.num_events(); ++i) {
      const EventHeader &g = gpu.headers[i], &h = cpu.headers[i];
      ASSERT_TRUE(g.stage == h.stage && g.batch == h.batch && g.head == h.head && g.kv_head == h.kv_head &&
                  g.q_begin == h.q_begin && g.split == h.split && g.step == h.step &&
                  g.num_key_ranges == h.num_key_ranges && g.keys[0].begin == h.keys[0].begin &&
                  g.keys[0].end == h.keys[0].end && g.rows == h.rows)
          << "event " << i;
      const RunEvent a = gpu.event(i), b = cpu.event(i);
      for (int32_t r = 0; r < g.rows; ++r) {
        ASSERT_TRUE(close(a.m[r], b.m[r], 1e-4f, 1e-5f)) << "event " << i << " m row " << r;
        ASSERT_TRUE(close(a.l[r], b.l[r], 1e-4f, 1e-5f)) << "event " << i << " l row " << r;
        for (int64_t d = 0; d < c.head_dim; ++d) {
          const size_t at = static_cast<size_t>(r * c.head_dim + d);
          ASSERT_TRUE(close(a.o[at], b.o[at], 1e-2f, 1e-3f)) << "event " << i << " O " << r << "," << d;
        }
      }
    }
    ASSERT_TRUE(gpu.output && cpu.output);
    for (int64_t i = 0; i < gpu.output->numel(); ++i)
      ASSERT_TRUE(close(gpu.output->get_float(i), cpu.output->get_float(i), 1e-2f, 1e-3f)) << i;
    EXPECT_TRUE(test::same_bytes(gpu.inputs.q, cpu.inputs.q));
  }
}

TEST(CliGpu, AutoPicksTheGpu) {
  test::TempDir dir;
  AttentionConfig c;
  c.seq_q = 64;
  c.seq_kv = 64;
  const RunView run = capture(c, "auto", 7, dir.path());
  EXPECT_EQ(run.metadata.at("backend"), "gpu");
}

}  // namespace
}  // namespace ts
