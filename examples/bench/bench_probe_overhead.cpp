// bench_probe_overhead.cpp — what probes cost a kernel when tracing is off. CMake builds it twice
// with examples/splitk/flash_attention_science.cu: bench_probe_overhead_trace0 (TILESCOPE_TRACE=0:
// the probes compiled out) and bench_probe_overhead_trace1 (=1: compiled in, run here with an
// empty view, i.e. tracing off at run time). Both time the two Split-K passes on buffers allocated
// once (CUDA events around each launch pair, after warm-ups) and print the median; compare.sh runs
// them in alternation and prints the ratio.
//
//   bench_probe_overhead_trace{0,1} [--runs N] [--batch B] [--heads H] [--seq S] [--head-dim D]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <tilescope/trace_view.h>

#include "../splitk/flash_attention_science.h"

#define CHECK(call)                                                                          \
  do {                                                                                       \
    const cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess)                                                                 \
      throw std::runtime_error(std::string(#call) + " failed: " + cudaGetErrorString(err_)); \
  } while (0)

int main(int argc, char** argv) {
  try {
    int runs = 200, B = 4, H = 16, S = 2048, D = 64;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string a = argv[i];
      const int v = std::stoi(argv[i + 1]);
      if (a == "--runs") runs = v;
      else if (a == "--batch") B = v;
      else if (a == "--heads") H = v;
      else if (a == "--seq") S = v;
      else if (a == "--head-dim") D = v;
      else throw std::invalid_argument("unknown option " + a);
    }
    const size_t n = static_cast<size_t>(B) * H * S * D;
    const size_t partial_rows = flashmoe::split_k_partial_rows(B, H, S);
    __half *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
    float *lse = nullptr, *partial_o = nullptr, *partial_max = nullptr, *partial_sum = nullptr;
    CHECK(cudaMalloc(&q, n * sizeof(__half)));
    CHECK(cudaMalloc(&k, n * sizeof(__half)));
    CHECK(cudaMalloc(&v, n * sizeof(__half)));
    CHECK(cudaMalloc(&o, n * sizeof(__half)));
    CHECK(cudaMalloc(&lse, static_cast<size_t>(B) * H * S * sizeof(float)));
    CHECK(cudaMalloc(&partial_o, partial_rows * D * sizeof(float)));
    CHECK(cudaMalloc(&partial_max, partial_rows * sizeof(float)));
    CHECK(cudaMalloc(&partial_sum, partial_rows * sizeof(float)));
    // Small values (0x2000 halves are about 2^-7): finite scores without a random generator.
    for (__half* p : {q, k, v}) CHECK(cudaMemset(p, 0x20, n * sizeof(__half)));

    cudaStream_t stream = nullptr;
    CHECK(cudaStreamCreate(&stream));
    cudaEvent_t start = nullptr, stop = nullptr;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    const tilescope::TraceView off{};  // tracing off at run time
    std::vector<float> ms;
    for (int i = 0; i < runs + 10; ++i) {
      CHECK(cudaEventRecord(start, stream));
      flashmoe::flash_attention_split_k_passes(q, k, v, o, lse, partial_o, partial_max, partial_sum, B, H, S, D,
                                               1.0f / std::sqrt(static_cast<float>(D)), false, off, stream);
      CHECK(cudaEventRecord(stop, stream));
      CHECK(cudaEventSynchronize(stop));
      float t = 0.0f;
      CHECK(cudaEventElapsedTime(&t, start, stop));
      if (i >= 10) ms.push_back(t);  // 10 warm-ups
    }
    std::sort(ms.begin(), ms.end());
    std::printf("TILESCOPE_TRACE=%d B=%d H=%d S=%d D=%d runs=%d median_ms=%.5f min_ms=%.5f max_ms=%.5f\n",
                TILESCOPE_TRACE, B, H, S, D, runs, ms[ms.size() / 2], ms.front(), ms.back());
    for (void* p : {static_cast<void*>(q), static_cast<void*>(k), static_cast<void*>(v), static_cast<void*>(o),
                    static_cast<void*>(lse), static_cast<void*>(partial_o), static_cast<void*>(partial_max),
                    static_cast<void*>(partial_sum)})
      CHECK(cudaFree(p));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_probe_overhead: %s\n", e.what());
    return 1;
  }
}
