// Runs the wmma prefill kernel on seeded random fp16 inputs and records its trace.
//
//   run_wmma_prefill [--batch B] [--heads H] [--seq-q SQ] [--seq-kv SKV] [--causal] [--seed N]
//                    [--bug none|k_row_major|v_unpadded_ldm|o_not_rescaled|no_score_barrier|
//                           kv_tail_off_by_one] --out PATH
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include <tilescope/recorder.h>

#include "wmma_prefill.h"

namespace {

constexpr const char* kBugNames[] = {"none", "k_row_major", "v_unpadded_ldm", "o_not_rescaled",
                                     "no_score_barrier", "kv_tail_off_by_one"};

struct Options {
  int batch = 1, heads = 2, seq_q = 96, seq_kv = 160;
  bool causal = false;
  unsigned long long seed = 1;
  wmma_prefill::WmmaBug bug = wmma_prefill::WmmaBug::none;
  std::string out;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "run_wmma_prefill: %s\nusage: run_wmma_prefill [--batch B] [--heads H] [--seq-q SQ] "
               "[--seq-kv SKV] [--causal] [--seed N] [--bug NAME] --out PATH\n", why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    auto positive = [&]() {
      const int n = std::atoi(value().c_str());
      if (n <= 0) usage((a + " needs a positive integer").c_str());
      return n;
    };
    if (a == "--batch") opt.batch = positive();
    else if (a == "--heads") opt.heads = positive();
    else if (a == "--seq-q") opt.seq_q = positive();
    else if (a == "--seq-kv") opt.seq_kv = positive();
    else if (a == "--causal") opt.causal = true;
    else if (a == "--seed") opt.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--out") opt.out = value();
    else if (a == "--bug") {
      const std::string name = value();
      int found = -1;
      for (int b = 0; b < static_cast<int>(std::size(kBugNames)); ++b)
        if (name == kBugNames[b]) found = b;
      if (found < 0) usage(("unknown bug " + name).c_str());
      opt.bug = static_cast<wmma_prefill::WmmaBug>(found);
    } else usage(("unknown option " + a).c_str());
  }
  if (opt.out.empty()) usage("--out PATH is required");
  return opt;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "run_wmma_prefill: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = parse(argc, argv);
  const int B = opt.batch, H = opt.heads, Sq = opt.seq_q, Skv = opt.seq_kv, D = wmma_prefill::kHeadDim;
  const float scale = 1.f / std::sqrt(static_cast<float>(D));

  // Q, K, V ~ N(0, 1), rounded to fp16.
  std::mt19937_64 rng(opt.seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto random_tensor = [&](size_t n) {
    std::vector<__half> t(n);
    for (auto& x : t) x = __float2half(normal(rng));
    return t;
  };
  const size_t q_n = size_t(B) * H * Sq * D, kv_n = size_t(B) * H * Skv * D;
  const std::vector<__half> hq = random_tensor(q_n), hk = random_tensor(kv_n), hv = random_tensor(kv_n);

  __half *dq, *dk, *dv, *dout;
  float* dlse;
  check(cudaMalloc(&dq, q_n * sizeof(__half)), "cudaMalloc");
  check(cudaMalloc(&dk, kv_n * sizeof(__half)), "cudaMalloc");
  check(cudaMalloc(&dv, kv_n * sizeof(__half)), "cudaMalloc");
  check(cudaMalloc(&dout, q_n * sizeof(__half)), "cudaMalloc");
  check(cudaMalloc(&dlse, size_t(B) * H * Sq * sizeof(float)), "cudaMalloc");
  check(cudaMemcpy(dq, hq.data(), q_n * sizeof(__half), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(dk, hk.data(), kv_n * sizeof(__half), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(dv, hv.data(), kv_n * sizeof(__half), cudaMemcpyHostToDevice), "cudaMemcpy");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");

  tilescope::Attention attention;
  attention.batch = B;
  attention.heads_q = H;
  attention.seq_q = Sq;
  attention.seq_kv = Skv;
  attention.head_dim = D;
  attention.scale = scale;
  attention.causal = opt.causal ? tilescope::Causal::bottom_right : tilescope::Causal::none;
  // The stage indices of wmma_prefill::Stage. P is rounded to fp16 before P V: p_rounded.
  tilescope::Stage step{"wmma.step", tilescope::StageKind::state};
  step.p_rounded = true;
  tilescope::Recorder recorder(attention, {step, {"wmma.final", tilescope::StageKind::final}});
  recorder.set_names("wmma_prefill", std::string("bug ") + kBugNames[static_cast<int>(opt.bug)] +
                                         ", seed " + std::to_string(opt.seed));
  const int64_t q_tiles = (Sq + 63) / 64, kv_tiles = (Skv + 63) / 64;
  const tilescope::TraceView view =
      recorder.start({.capacity = int64_t{B} * H * q_tiles * (kv_tiles + 1), .max_rows = 64}, stream);
  check(wmma_prefill::wmma_prefill_forward(dq, dk, dv, dout, dlse, B, H, Sq, Skv, scale, opt.causal, opt.bug,
                                           view, stream),
        "wmma_prefill_forward");
  recorder.set_inputs(tilescope::bhsd(dq, B, H, Sq, D), tilescope::bhsd(dk, B, H, Skv, D),
                      tilescope::bhsd(dv, B, H, Skv, D), stream);
  recorder.set_output(tilescope::bhsd(dout, B, H, Sq, D), tilescope::lse_bhs(dlse, B, H, Sq), stream);
  recorder.write(opt.out);
  std::printf("wrote %s\n", opt.out.c_str());

  cudaFree(dq);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dout);
  cudaFree(dlse);
  cudaStreamDestroy(stream);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "run_wmma_prefill: %s\n", e.what());
  return 3;
}
