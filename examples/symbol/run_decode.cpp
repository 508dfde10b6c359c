// run_decode.cpp — runs the GQA decode attention of gqa_decode_attention.cu under tilescope's
// recorder, the trace buffer reaching the kernel through its `__device__` symbol, and writes a
// trace. Builds for the GPU and for tilescope's CPU path alike.
//
//   run_decode [--out FILE] [--seed N]
//
// The shape is a decode step of a batch of two sequences with different cache lengths: 4 new
// queries per sequence, 8 query heads on 2 kv heads, head_dim 64, a cache of 256 positions.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <tilescope/recorder.h>

#include "gqa_decode_attention.h"

namespace {

#define CHECK(call)                                                                          \
  do {                                                                                       \
    const cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess)                                                                 \
      throw std::runtime_error(std::string(#call) + " failed: " + cudaGetErrorString(err_)); \
  } while (0)

template <typename T>
T* device_copy(const std::vector<T>& host) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, host.size() * sizeof(T)));
  CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

void run(const std::string& out_path, unsigned seed) {
  decode::DecodeShape shape{};
  shape.batch = 2;
  shape.heads_q = 8;
  shape.heads_kv = 2;
  shape.seq_q = 4;
  shape.cache_len = 256;
  shape.head_dim = 64;
  shape.scale = 1.0f / std::sqrt(64.0f);
  const std::vector<int> cache_lens = {256, 137};
  const int B = shape.batch, Hq = shape.heads_q, Hkv = shape.heads_kv, Sq = shape.seq_q, Skv = shape.cache_len,
            D = shape.head_dim;

  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<__nv_bfloat16> q(static_cast<size_t>(B) * Sq * Hq * D), k(static_cast<size_t>(B) * Skv * Hkv * D),
      v(k.size());
  for (auto* t : {&q, &k, &v})
    for (__nv_bfloat16& x : *t) x = __float2bfloat16(normal(rng));
  __nv_bfloat16* dq = device_copy(q);
  __nv_bfloat16* dk = device_copy(k);
  __nv_bfloat16* dv = device_copy(v);
  int* dlens = device_copy(cache_lens);
  __nv_bfloat16* dout = nullptr;
  float* dlse = nullptr;
  CHECK(cudaMalloc(&dout, q.size() * sizeof(__nv_bfloat16)));
  CHECK(cudaMalloc(&dlse, static_cast<size_t>(B) * Hq * Sq * sizeof(float)));
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreate(&stream));

  tilescope::Attention attention;
  attention.batch = B;
  attention.heads_q = Hq;
  attention.heads_kv = Hkv;
  attention.seq_q = Sq;
  attention.seq_kv = Skv;
  attention.head_dim = D;
  attention.scale = shape.scale;
  attention.causal = tilescope::Causal::bottom_right;
  attention.kv_lens = {cache_lens.begin(), cache_lens.end()};
  tilescope::Recorder recorder(attention, {{"decode.step", tilescope::StageKind::state}});
  recorder.set_names("gqa_decode_attention", "decode step, cache lengths 256 and 137");
  // [doc:bind-call]
  recorder.start({.capacity = 4096, .max_rows = 1}, stream);
  decode::bind_decode_trace(recorder, stream);
  decode::gqa_decode_attention_forward(dq, dk, dv, dlens, dout, dlse, shape, stream);  // unchanged call
  // [/doc]
  // [doc:layouts]
  recorder.set_inputs(tilescope::bshd(dq, B, Sq, Hq, D), tilescope::bshd(dk, B, Skv, Hkv, D),
                      tilescope::bshd(dv, B, Skv, Hkv, D), stream);
  recorder.set_output(tilescope::bshd(dout, B, Sq, Hq, D),
                      tilescope::lse_bhs(dlse, B, Hq, Sq, tilescope::LseBase::base2), stream);
  // [/doc]
  recorder.collect(stream);
  recorder.write(out_path);
  std::printf("wrote %s: %lld events, %llu dropped\n", out_path.c_str(), static_cast<long long>(recorder.num_events()),
              static_cast<unsigned long long>(recorder.dropped_events()));

  CHECK(cudaStreamDestroy(stream));
  for (void* p : {static_cast<void*>(dq), static_cast<void*>(dk), static_cast<void*>(dv), static_cast<void*>(dlens),
                  static_cast<void*>(dout), static_cast<void*>(dlse)})
    CHECK(cudaFree(p));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string out = "gqa_decode.trace.safetensors";
    unsigned seed = 1;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--out" && i + 1 < argc) out = argv[++i];
      else if (a == "--seed" && i + 1 < argc) seed = static_cast<unsigned>(std::stoul(argv[++i]));
      else throw std::invalid_argument("unknown option " + a + " (run_decode [--out FILE] [--seed N])");
    }
    run(out, seed);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_decode: %s\n", e.what());
    return 1;
  }
}
