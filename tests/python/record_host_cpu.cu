// record_host_cpu.cu — runs examples/torch_extension's kernels (fp32) on tilescope's CPU path into
// a trace buffer that the Python package laid out, initialised and described (what
// tilescope.record does with a torch tensor on a GPU), and writes the buffer's bytes, O and the
// LSE back: tests/python/test_record_host.py then collects and writes the trace with the package
// and diffs it. The view's pointers come as offsets into the buffer (packed at address 0) and are
// moved to where the buffer is here; every other field is the package's.
//   record_host_cpu VIEW INIT QKV B H HKV SQ SKV D CAUSAL OUT_BUFFER OUT_O OUT_LSE
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "splitk_attention_kernels.cuh"

namespace {

std::vector<char> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot read ") + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const char* path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw std::runtime_error(std::string("cannot write ") + path);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

template <typename P>
P* moved(P* offset, char* base) {
  return reinterpret_cast<P*>(base + reinterpret_cast<uintptr_t>(offset));
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 14) {
    std::fprintf(stderr, "usage: %s VIEW INIT QKV B H HKV SQ SKV D CAUSAL OUT_BUFFER OUT_O OUT_LSE\n", argv[0]);
    return 2;
  }
  const std::vector<char> view_bytes = read_file(argv[1]), init = read_file(argv[2]), qkv = read_file(argv[3]);
  const int b = std::atoi(argv[4]), h = std::atoi(argv[5]), hkv = std::atoi(argv[6]), sq = std::atoi(argv[7]),
            skv = std::atoi(argv[8]), d = std::atoi(argv[9]);
  const bool causal = std::atoi(argv[10]) != 0;
  tilescope::TraceView view;
  if (view_bytes.size() != sizeof(view)) throw std::runtime_error("the view is not sizeof(TraceView) bytes");
  std::memcpy(&view, view_bytes.data(), sizeof(view));
  const size_t nq = size_t(b) * h * sq * d, nkv = size_t(b) * hkv * skv * d;
  if (qkv.size() != (nq + 2 * nkv) * sizeof(float)) throw std::runtime_error("QKV is not B x H x SQ x D + 2 x B x HKV x SKV x D floats");

  char* buffer = nullptr;
  check(cudaMalloc(&buffer, init.size()), "cudaMalloc buffer");
  check(cudaMemcpy(buffer, init.data(), init.size(), cudaMemcpyHostToDevice), "cudaMemcpy buffer");
  view.headers = moved(view.headers, buffer);
  view.m = moved(view.m, buffer);
  view.l = moved(view.l, buffer);
  view.o = moved(view.o, buffer);
  view.next_slot = moved(view.next_slot, buffer);
  view.dropped = moved(view.dropped, buffer);

  const int kv_tiles = (skv + splitk_attention::TILE_SIZE_N - 1) / splitk_attention::TILE_SIZE_N;
  const size_t partial_rows = size_t(b) * h * kv_tiles * sq;
  float *q, *k, *v, *o, *lse, *po, *pm, *ps;
  check(cudaMalloc(&q, nq * 4), "cudaMalloc");
  check(cudaMalloc(&k, nkv * 4), "cudaMalloc");
  check(cudaMalloc(&v, nkv * 4), "cudaMalloc");
  check(cudaMalloc(&o, nq * 4), "cudaMalloc");
  check(cudaMalloc(&lse, size_t(b) * h * sq * 4), "cudaMalloc");
  check(cudaMalloc(&po, partial_rows * d * 4), "cudaMalloc");
  check(cudaMalloc(&pm, partial_rows * 4), "cudaMalloc");
  check(cudaMalloc(&ps, partial_rows * 4), "cudaMalloc");
  const auto* host = reinterpret_cast<const float*>(qkv.data());
  check(cudaMemcpy(q, host, nq * 4, cudaMemcpyHostToDevice), "cudaMemcpy Q");
  check(cudaMemcpy(k, host + nq, nkv * 4, cudaMemcpyHostToDevice), "cudaMemcpy K");
  check(cudaMemcpy(v, host + nq + nkv, nkv * 4, cudaMemcpyHostToDevice), "cudaMemcpy V");

  splitk_attention::split_k_forward<float>(q, k, v, o, lse, po, pm, ps, b, h, hkv, sq, skv, d, causal, view, nullptr);
  check(cudaGetLastError(), "launch");
  check(cudaDeviceSynchronize(), "kernels");

  std::vector<char> out(init.size());
  check(cudaMemcpy(out.data(), buffer, out.size(), cudaMemcpyDeviceToHost), "cudaMemcpy buffer back");
  write_file(argv[11], out.data(), out.size());
  std::vector<float> host_o(nq), host_lse(size_t(b) * h * sq);
  check(cudaMemcpy(host_o.data(), o, nq * 4, cudaMemcpyDeviceToHost), "cudaMemcpy O");
  check(cudaMemcpy(host_lse.data(), lse, host_lse.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy LSE");
  write_file(argv[12], host_o.data(), nq * 4);
  write_file(argv[13], host_lse.data(), host_lse.size() * 4);
  for (void* p : {static_cast<void*>(buffer), static_cast<void*>(q), static_cast<void*>(k), static_cast<void*>(v),
                  static_cast<void*>(o), static_cast<void*>(lse), static_cast<void*>(po), static_cast<void*>(pm),
                  static_cast<void*>(ps)})
    cudaFree(p);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "record_host_cpu: %s\n", e.what());
  return 1;
}
