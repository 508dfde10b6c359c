// bench_reference_gpu: the float64 reference of a full S = TS_BENCH_SEQ (default 8192), D = 128,
// fp16 trace's row blocks on the GPU (kernels/reference_gpu.h), beside the CPU's
// (docs/perf.md, "Reference on the GPU"):
//   splitk: 1024 row blocks of 8 rows, boundaries at the 8 split ends (a full Split-K trace);
//   fa1:    128 row blocks of 64 rows, boundaries every 64 keys (a full FA-1 trace);
//   upload: K and V to the device (GpuReference's constructor), once per run.
// Each figure is the median of 5 runs after a warm-up, wall time, the RowBlockReference
// objects' assembly on the host included. A plain program (no benchmark library), so that it
// runs on the GPU machine as built here:
//   cmake --build build/release --target bench_reference_gpu
//   build/release/tests/kernels/bench_reference_gpu [--cpu]   # --cpu: the CPU path too (slow)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/reference.h"
#include "kernels/reference_gpu.h"
#include "tests/kernels/random_head_inputs.h"

namespace ts {
namespace {

double median_ms(const std::function<void()>& run, int repeats = 5) {
  run();  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Set {
  std::vector<RowBlock> blocks;
  std::vector<std::vector<int64_t>> bounds;
};

Set row_blocks(int64_t seq, int32_t rows, int64_t step) {
  Set s;
  std::vector<int64_t> b;
  for (int64_t x = step; x < seq; x += step) b.push_back(x);
  for (int64_t q = 0; q < seq; q += rows) {
    s.blocks.push_back({0, 0, static_cast<int32_t>(q), rows});
    s.bounds.push_back(b);
  }
  return s;
}

int run(int argc, char** argv) {
  const bool cpu = argc > 1 && std::strcmp(argv[1], "--cpu") == 0;
  std::string reason;
  if (!gpu_reference_available(&reason)) {
    std::printf("no GPU reference here: %s\n", reason.c_str());
    return 1;
  }
  const char* env = std::getenv("TS_BENCH_SEQ");
  AttentionSpec spec;
  spec.seq_q = spec.seq_kv = env ? std::atoll(env) : 8192;
  spec.head_dim = 128;
  spec.dtype = DType::f16;
  const HeadInputs in = test::random_head_inputs(spec, 1);
  const ReferenceInputs prepared(spec, in);
  std::printf("S = %lld, D = 128, fp16; median of 5, ms\n", static_cast<long long>(spec.seq_q));
  std::printf("upload   %10.1f\n", median_ms([&] { GpuReference gpu(prepared); }));
  const GpuReference gpu(prepared);
  const Set splitk = row_blocks(spec.seq_kv, 8, spec.seq_kv / 8), fa1 = row_blocks(spec.seq_kv, 64, 64);
  for (const auto& [name, set] : {std::pair{"splitk", &splitk}, std::pair{"fa1", &fa1}}) {
    const double g = median_ms([&] { gpu.compute(set->blocks, set->bounds); });
    std::printf("%-8s %10.1f GPU", name, g);
    if (cpu) {
      const double c = median_ms(
          [&] {
            for (size_t i = 0; i < set->blocks.size(); ++i) compute_row_block(prepared, set->blocks[i], set->bounds[i]);
          },
          1);
      std::printf("   %10.1f CPU (one thread)", c);
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace ts

int main(int argc, char** argv) { return ts::run(argc, argv); }
