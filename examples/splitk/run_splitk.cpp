// run_splitk.cpp — runs the Split-K attention of flash_attention_science.cu under tilescope's
// recorder and writes a trace: the host code a user adds beside their kernel (where the seed team
// had their Python bindings). The same file builds for the GPU (with CUDA's runtime) and for
// tilescope's CPU path (with its runtime subset).
//
//   run_splitk [--out FILE] [--dtype fp16|bf16] [--batch B] [--heads H] [--seq S] [--head-dim D]
//              [--causal] [--seed N]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <tilescope/recorder.h>

#include "flash_attention_science.h"

namespace {

#define CHECK(call)                                                                          \
  do {                                                                                       \
    const cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess)                                                                 \
      throw std::runtime_error(std::string(#call) + " failed: " + cudaGetErrorString(err_)); \
  } while (0)

// The trace's name for this build of the kernel.
#if defined(FLASH_ATTENTION_PLANTED_BUG)
constexpr const char* kRunName = "planted bug: local_sum counted twice in the reduce";
#else
constexpr const char* kRunName = "fixed";
#endif

struct Options {
  std::string out = "flash_attention_split_k.trace.safetensors";
  std::string dtype = "fp16";
  int batch = 1, heads = 2, seq = 256, head_dim = 64;
  bool causal = false;
  unsigned seed = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--out") o.out = value();
    else if (a == "--dtype") o.dtype = value();
    else if (a == "--batch") o.batch = std::stoi(value());
    else if (a == "--heads") o.heads = std::stoi(value());
    else if (a == "--seq") o.seq = std::stoi(value());
    else if (a == "--head-dim") o.head_dim = std::stoi(value());
    else if (a == "--causal") o.causal = true;
    else if (a == "--seed") o.seed = static_cast<unsigned>(std::stoul(value()));
    else throw std::invalid_argument("unknown option " + a + " (see the top of run_splitk.cpp)");
  }
  if (o.dtype != "fp16" && o.dtype != "bf16") throw std::invalid_argument("--dtype is fp16 or bf16");
  return o;
}

template <typename T>
T* device_copy(const std::vector<T>& host) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, host.size() * sizeof(T)));
  CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

template <typename T>
void run(const Options& opt) {
  const int B = opt.batch, H = opt.heads, S = opt.seq, D = opt.head_dim;
  const size_t n = static_cast<size_t>(B) * H * S * D;
  std::mt19937 rng(opt.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<T> q(n), k(n), v(n);
  for (auto* t : {&q, &k, &v})
    for (T& x : *t) x = T(normal(rng));
  T* dQ = device_copy(q);
  T* dK = device_copy(k);
  T* dV = device_copy(v);
  T* dO = nullptr;
  float* dLse = nullptr;
  CHECK(cudaMalloc(&dO, n * sizeof(T)));
  CHECK(cudaMalloc(&dLse, static_cast<size_t>(B) * H * S * sizeof(float)));
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreate(&stream));
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));

  // [doc:recorder]
  tilescope::Attention attention;
  attention.batch = B;
  attention.heads_q = H;
  attention.seq_q = S;
  attention.seq_kv = S;
  attention.head_dim = D;
  attention.scale = scale;
  attention.causal = opt.causal ? tilescope::Causal::top_left : tilescope::Causal::none;
  // The stage table, in the order of flashmoe::TraceStage.
  tilescope::Recorder recorder(attention, {{"split_k_partial", tilescope::StageKind::state},
                                           {"split_k_reduce", tilescope::StageKind::merge}});
  recorder.set_names("flash_attention_forward_split_k", kRunName);
  // Each query row records one event per kv tile in each pass.
  const int64_t kv_tiles = (S + 63) / 64;
  const tilescope::TraceView view =
      recorder.start({.capacity = 2 * int64_t{B} * H * S * kv_tiles, .max_rows = 1}, stream);
  flashmoe::flash_attention_forward_split_k<T>(dQ, dK, dV, dO, dLse, B, H, S, D, scale, opt.causal, view,
                                               stream);
  recorder.set_inputs(tilescope::bhsd(dQ, B, H, S, D), tilescope::bhsd(dK, B, H, S, D),
                      tilescope::bhsd(dV, B, H, S, D), stream);
  recorder.set_output(tilescope::bhsd(dO, B, H, S, D), tilescope::lse_bhs(dLse, B, H, S), stream);
  recorder.write(opt.out);
  // [/doc]
  std::printf("wrote %s: %lld events, %llu dropped\n", opt.out.c_str(),
                static_cast<long long>(recorder.num_events()), static_cast<unsigned long long>(recorder.dropped_events()));

  CHECK(cudaStreamDestroy(stream));
  for (void* p : {static_cast<void*>(dQ), static_cast<void*>(dK), static_cast<void*>(dV), static_cast<void*>(dO),
                  static_cast<void*>(dLse)})
    CHECK(cudaFree(p));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options opt = parse(argc, argv);
    if (opt.dtype == "fp16")
      run<__half>(opt);
    else
      run<__nv_bfloat16>(opt);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_splitk: %s\n", e.what());
    return 1;
  }
}
