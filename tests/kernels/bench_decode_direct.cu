// The Split-K decode kernels launched directly (no launcher, no trace buffers), for measuring
// changes to the decode kernel on a lent GPU: splitk_partial_kernel + splitk_reduce_kernel on
// B x H=32 x Sq=1 x Skv=32768 x D=128 (bf16 or f32), plain and traced (nothing recorded), with the
// split count given (--splits, default 1: the heuristic's choice for B=8 H=32 on 132 SMs) and at
// most --blocks blocks per SM (default kSplitkBlocksPerSm; 0: as many as fit; the extra blocks kept
// out with shared memory, as launch_gpu.cu does). Each variant's output is checked against a
// float64 reference of three (batch, head) pairs and for finiteness everywhere (the output
// poisoned before the check run), then timed: median over 7 batches of 20 runs (CUDA events),
// after 3 warm-up runs. bench_kernels_gpu measures the launcher's path; this one exists to try
// kernel variants (split counts, occupancy) and to compare two trees' kernels bit for bit. At one
// split it also times the partial writing O itself with no reduce, as the launcher runs it. With
// bf16 (where the kernel's decode runs on tensor cores) it also times a prototype of it, with and
// without cuDNN's 128-key tiles (namespace proto_tile128 below: bf16, one row, MHA, no mask;
// docs/perf.md has their figures), each checked against the reference the same way.
//
// Built with the GPU benchmarks (TILESCOPE_BENCH, TILESCOPE_CUDA), or by hand against any tree,
// e.g. an older checkout to compare with, and carried to the GPU machine:
//   nvcc -std=c++20 -O2 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a
//        -I. -Iinstrumentation/probe -Xcompiler -static-libstdc++,-static-libgcc
//        tests/kernels/bench_decode_direct.cu -o bench_decode_direct        (one line)
//   bench_decode_direct [--dtype bf16|f32] [--batch 8] [--splits 1] [--blocks N] [--seed 1]
//                       [--copy] [--roof] [--out FILE]
// --copy: also a 2 GiB device-to-device copy's bandwidth (bytes read + written); --roof: also the
// bandwidth of kernels that only read K and V (read_kv: the decode's grid and larger ones); --out: the plain
// build's O, raw bytes (cmp two builds' files). Prints two lines per variant: registers, shared
// bytes, resident blocks per SM, splits, median ms of the partial and the reduce, GB/s (K and V
// read once, Q read, O written), max abs error; then the partial alone, timed the same way (the
// difference: the reduce and the gap between the launches). Exit status 1 on a wrong result, 2 on
// a CUDA error or bad argument.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/kernel_smem.h"
#include "kernels/splitk_partial.cuh"
#include "kernels/splitk_reduce.cuh"
#include "kernels/tile_shapes.h"  // kSplitkBlocksPerSm

namespace {

using ts::AttentionParams;
using ts::KernelVariant;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

// Median over 7 batches of `runs` calls of `launch` (CUDA events, ms per call), after 3 calls.
template <typename Launch>
double median_ms_of(Launch launch, int runs) {
  for (int i = 0; i < 3; ++i) launch();
  check(cudaGetLastError(), "launch");
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  std::vector<float> ms;
  for (int rep = 0; rep < 7; ++rep) {
    check(cudaEventRecord(a), "record");
    for (int i = 0; i < runs; ++i) launch();
    check(cudaEventRecord(b), "record");
    check(cudaEventSynchronize(b), "sync");
    float t = 0.0f;
    check(cudaEventElapsedTime(&t, a, b), "elapsed");
    ms.push_back(t / static_cast<float>(runs));
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms[ms.size() / 2];
}

__device__ __host__ inline float random_value(uint64_t i, uint64_t seed) {  // in [-1, 1)
  uint64_t x = i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<float>(x >> 40) / static_cast<float>(1ull << 23) - 1.0f;
}

template <typename T>
__global__ void fill(T* p, uint64_t n, uint64_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * blockDim.x)
    p[i] = ts::device::from_float<T>(random_value(i, seed));
}

// On the host (ts::device::to_float is device code): bf16 is the high half of a float's bits.
template <typename T>
double to_double(T x) {
  float f = 0.0f;
  if constexpr (sizeof(T) == 2) {
    uint16_t h = 0;
    std::memcpy(&h, &x, 2);
    const uint32_t bits = uint32_t{h} << 16;
    std::memcpy(&f, &bits, 4);
  } else {
    std::memcpy(&f, &x, 4);
  }
  return static_cast<double>(f);
}

struct Shape {
  int batch = 8, heads = 32, seq_kv = 32768, d = 128;
  int splits = 1;  // what kernels/tiling.cpp's heuristic chooses for B=8 H=32 on 132 SMs
  int blocks = ts::kSplitkBlocksPerSm;  // at most this many blocks per SM (0: as many as fit)
};

template <typename T>
struct Bench {
  Shape s;
  AttentionParams p{};
  T *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float *lse = nullptr, *po = nullptr, *pm = nullptr, *pl = nullptr;
  uint64_t seed = 1;

  size_t q_elems() const { return size_t(s.batch) * s.heads * s.d; }
  size_t kv_elems() const { return size_t(s.batch) * s.heads * s.seq_kv * s.d; }
  double bytes() const { return double(kv_elems()) * 2 * sizeof(T) + 2.0 * q_elems() * sizeof(T); }

  void setup() {
    check(cudaMalloc(&q, q_elems() * sizeof(T)), "malloc q");
    check(cudaMalloc(&k, kv_elems() * sizeof(T)), "malloc k");
    check(cudaMalloc(&v, kv_elems() * sizeof(T)), "malloc v");
    check(cudaMalloc(&o, q_elems() * sizeof(T)), "malloc o");
    fill<<<1024, 256>>>(q, q_elems(), seed * 3 + 0);
    fill<<<4096, 256>>>(k, kv_elems(), seed * 3 + 1);
    fill<<<4096, 256>>>(v, kv_elems(), seed * 3 + 2);
    check(cudaGetLastError(), "fill launch");
    check(cudaDeviceSynchronize(), "fill");
    const int block_n = ts::splitk_block_n(s.d);
    const int kv_tiles = static_cast<int>(ts::ceil_div(s.seq_kv, block_n));
    const int splits = s.splits;
    const size_t rows = size_t(s.batch) * s.heads * splits;
    check(cudaMalloc(&lse, q_elems() / s.d * sizeof(float)), "malloc lse");
    check(cudaMalloc(&po, rows * s.d * sizeof(float)), "malloc partial o");
    check(cudaMalloc(&pm, rows * sizeof(float)), "malloc partial m");
    check(cudaMalloc(&pl, rows * sizeof(float)), "malloc partial l");
    p.q = q;
    p.k = k;
    p.v = v;
    p.o = o;
    p.lse = lse;
    p.partial_o = po;
    p.partial_m = pm;
    p.partial_l = pl;
    p.q_row_stride = p.k_row_stride = p.v_row_stride = p.o_row_stride = s.d;
    p.q_head_stride = p.o_head_stride = s.d;
    p.k_head_stride = p.v_head_stride = int64_t{s.seq_kv} * s.d;
    p.q_batch_stride = p.o_batch_stride = int64_t{s.heads} * s.d;
    p.k_batch_stride = p.v_batch_stride = int64_t{s.heads} * s.seq_kv * s.d;
    p.batch = s.batch;
    p.heads = p.heads_kv = s.heads;
    p.seq_q = 1;
    p.seq_kv = s.seq_kv;
    p.head_dim = s.d;
    p.mask = ts::KernelMask{1, s.seq_kv, false, -1, -1};
    p.scale = static_cast<float>(1.0 / std::sqrt(double(s.d)));
    p.block_m = 1;
    p.block_n = block_n;
    p.num_q_tiles = 1;
    p.num_kv_tiles = kv_tiles;
    p.num_splits = splits;
    p.kv_tiles_per_split = static_cast<int>(ts::ceil_div(kv_tiles, splits));
  }

  // The launcher's shared-memory rule (kernels/launch_gpu.cu: occupancy_matched_smem).
  static int blocks_per_sm(const void* fn, size_t smem) {
    int n = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, ts::kKernelThreads, smem), "occupancy");
    return n;
  }
  static size_t padded_smem(const void* fn, size_t smem, int target) {
    check(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024), "smem attribute");
    if (blocks_per_sm(fn, smem) <= target) return smem;
    for (size_t bytes = smem; bytes <= 200 * 1024; bytes += 256)
      if (blocks_per_sm(fn, bytes) <= target) return bytes;
    return smem;
  }

  void run_once(const void* partial, const void* reduce, size_t smem) const {
    AttentionParams params = p;
    void* args[] = {&params};
    check(cudaLaunchKernel(partial, dim3(p.num_splits, s.heads, s.batch), dim3(ts::kKernelThreads), args, smem, nullptr),
          "launch partial");
    if (reduce != nullptr)
    check(cudaLaunchKernel(reduce, dim3(1, s.heads, s.batch), dim3(ts::kKernelThreads), args, 0, nullptr),
          "launch reduce");
  }

  // Max abs error of O over three (batch, head) pairs against a float64 reference; NaN when an
  // output element is not finite.
  double check_output(const void* partial, const void* reduce, size_t smem, std::vector<unsigned char>* o_bytes) const {
    check(cudaMemset(o, 0xff, q_elems() * sizeof(T)), "poison o");
    run_once(partial, reduce, smem);
    check(cudaDeviceSynchronize(), "check run");
    std::vector<T> oh(q_elems());
    check(cudaMemcpy(oh.data(), o, q_elems() * sizeof(T), cudaMemcpyDeviceToHost), "copy o");
    if (o_bytes != nullptr) {
      o_bytes->resize(q_elems() * sizeof(T));
      std::memcpy(o_bytes->data(), oh.data(), o_bytes->size());
    }
    for (const T& x : oh)
      if (!std::isfinite(to_double(x))) return NAN;
    const int pairs[3][2] = {{0, 0}, {s.batch / 2, 17 % s.heads}, {s.batch - 1, s.heads - 1}};
    double worst = 0.0;
    const size_t head = size_t(s.seq_kv) * s.d;
    std::vector<T> qh(s.d), kh(head), vh(head);
    for (const auto& bh : pairs) {
      const size_t qi = (size_t(bh[0]) * s.heads + bh[1]) * s.d, ki = (size_t(bh[0]) * s.heads + bh[1]) * head;
      check(cudaMemcpy(qh.data(), q + qi, s.d * sizeof(T), cudaMemcpyDeviceToHost), "copy q");
      check(cudaMemcpy(kh.data(), k + ki, head * sizeof(T), cudaMemcpyDeviceToHost), "copy k");
      check(cudaMemcpy(vh.data(), v + ki, head * sizeof(T), cudaMemcpyDeviceToHost), "copy v");
      std::vector<double> sc(s.seq_kv), out(s.d, 0.0);
      double m = -INFINITY, l = 0.0;
      for (int j = 0; j < s.seq_kv; ++j) {
        double dot = 0.0;
        for (int c = 0; c < s.d; ++c) dot += to_double(qh[c]) * to_double(kh[size_t(j) * s.d + c]);
        sc[j] = dot / std::sqrt(double(s.d));
        m = std::max(m, sc[j]);
      }
      for (int j = 0; j < s.seq_kv; ++j) {
        const double e = std::exp(sc[j] - m);
        l += e;
        for (int c = 0; c < s.d; ++c) out[c] += e * to_double(vh[size_t(j) * s.d + c]);
      }
      for (int c = 0; c < s.d; ++c) worst = std::max(worst, std::fabs(out[c] / l - to_double(oh[qi + c])));
    }
    return worst;
  }

  double median_ms(const void* partial, const void* reduce, size_t smem) const {
    return median_ms_of([&] { run_once(partial, reduce, smem); }, 20);
  }

  // Returns false on a wrong result.
  bool variant(const char* name, const void* partial, const void* reduce, size_t smem_plan,
               std::vector<unsigned char>* o_bytes = nullptr) const {
    const size_t smem = s.blocks > 0 ? padded_smem(partial, smem_plan, s.blocks) : smem_plan;
    check(cudaFuncSetAttribute(partial, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)), "smem attribute");
    cudaFuncAttributes attr{};
    check(cudaFuncGetAttributes(&attr, partial), "attributes");
    const double err = check_output(partial, reduce, smem, o_bytes);
    const bool ok = std::isfinite(err) && err < (sizeof(T) == 4 ? 1e-5 : 1e-3);
    if (!ok) {
      std::printf("%-34s WRONG: max abs error %.3g\n", name, err);
      return false;
    }
    const double t = median_ms(partial, reduce, smem);
    std::printf("%-34s regs %3d  smem %6zu  blocks/SM %d  splits %d  %.4f ms  %6.0f GB/s  err %.2g\n", name,
                attr.numRegs, smem, blocks_per_sm(partial, smem), p.num_splits, t, bytes() / t / 1e6, err);
    const double tp = median_ms(partial, nullptr, smem);
    std::printf("%-34s partial alone %.4f ms (reduce and gap %.4f ms)\n", name, tp, t - tp);
    return true;
  }
};

// A prototype of the decode partial on tensor cores, measured beside the landed kernel and cuDNN
// (docs/perf.md, "Split-K decode: what cuDNN's kernel does differently" and "Split-K decode on
// tensor cores"; at 64-key tiles it is what the kernel's decode became). Not a tilescope kernel:
// bf16, head dim 128, one query row, MHA, no mask or softcap, seq_kv a multiple of the tile, no
// probes, no faults, GPU only (mma.sync, ldmatrix and cp.async through ts::tc). Each warp keeps
// the row in its A fragments, padded to 16 rows (rows 1-15 zero), as cuDNN's kernel does; the
// warps' states are merged at the end as the landed kernel merges them.
namespace proto_tile128 {
// One K and one V buffer a warp of kKw keys (tiles of 4 kKw keys), K of the next tile loading
// during this tile's P V and V during the next tile's scores (FA-2's order). kKw = 32: cuDNN's
// tile shape (128 keys a tile); kKw = 16: the landed kernel's tiling (64 keys). kFinal (one split
// only): O normalised and written in the input dtype, with the LSE, so that no reduce runs.
constexpr int kD = 128, kLK = kD + 8;
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  return ts::tc::pack_halves(__float2bfloat16_rn(lo), __float2bfloat16_rn(hi));
}
// After the kv loop: each warp's state (its O in the accumulator fragments, row 0 held by the
// lanes of group 0; m and l) into `wo`, then merged a thread per column and written as the
// split's partial state or, kFinal (one split), as the output in bf16 and the LSE.
template <bool kFinal>
__device__ __forceinline__ void store_block_state(const ts::AttentionParams& p, float* wo, const float (&o)[kD / 8][4],
                                                  float m, float l, int batch, int head, int split) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  float* my = wo + warp * (kD + 8);
  if (g == 0) {
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) { my[n * 8 + 2 * t4] = o[n][0]; my[n * 8 + 2 * t4 + 1] = o[n][1]; }
    if (t4 == 0) { my[kD] = m; my[kD + 1] = l; }
  }
  __syncthreads();
  float mm = -INFINITY;
  for (int w = 0; w < 4; ++w) mm = fmaxf(mm, wo[w * (kD + 8) + kD]);
  float ll = 0.0f, oo = 0.0f;
  for (int w = 0; w < 4; ++w) {
    const float* ws = wo + w * (kD + 8);
    const float f = __expf(ws[kD] - mm);
    ll += ws[kD + 1] * f;
    oo += ws[tid] * f;
  }
  const int64_t row = (static_cast<int64_t>(batch) * p.heads + head) * p.num_splits + split;
  if constexpr (kFinal) {  // one split: O normalised and stored in the input dtype, no reduce
    static_cast<__nv_bfloat16*>(p.o)[(static_cast<int64_t>(batch) * p.heads + head) * kD + tid] = __float2bfloat16_rn(oo / ll);
    if (tid == 0) p.lse[static_cast<int64_t>(batch) * p.heads + head] = mm + logf(ll);
  } else {
    p.partial_o[row * kD + tid] = oo;
    if (tid == 0) { p.partial_m[row] = mm; p.partial_l[row] = ll; }
  }
}
template <int kKw>
constexpr int kSmemOf = 4 * 2 * kKw * kLK * 2 + 4 * (kD + 8) * 4;
constexpr int kSmem = kSmemOf<32>;
template <bool kFinal, int kKw = 32>
__global__ void __launch_bounds__(128) partial(const __grid_constant__ ts::AttentionParams p) {
  using T = __nv_bfloat16;
  constexpr int kBN = 4 * kKw, kCopies = kKw * (kD / 8) / 32, kBufElems = kKw * kLK, kNB = kKw / 8;
  extern __shared__ __align__(16) char smem[];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  const int split = blockIdx.x, head = blockIdx.y, batch = blockIdx.z;
  T* k_st = reinterpret_cast<T*>(smem) + warp * 2 * kBufElems;
  T* v_st = k_st + kBufElems;
  float* wo = reinterpret_cast<float*>(smem + 4 * 2 * kBufElems * 2);
  const T* q = static_cast<const T*>(p.q) + batch * p.q_batch_stride + head * p.q_head_stride;
  const T* k = static_cast<const T*>(p.k) + batch * p.k_batch_stride + head * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + batch * p.v_batch_stride + head * p.v_head_stride;
  // Its own tiles over the split's keys (the params' tiles are the landed kernel's)
  const int t_begin = split * p.kv_tiles_per_split * p.block_n / kBN;
  const int t_end = min(static_cast<int>(p.seq_kv), (split + 1) * p.kv_tiles_per_split * p.block_n) / kBN;
  const int64_t ks = p.k_row_stride, vs = p.v_row_stride;
  auto copy = [&](T* dst, const T* src, int64_t stride, int t) {
    const int64_t key0 = static_cast<int64_t>(t) * kBN + warp * kKw;
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      const int e = lane + 32 * i, row = e / (kD / 8), col = (e % (kD / 8)) * 8;
      ts::tc::cp_async_ca_zfill<16>(dst + row * kLK + col, src + (key0 + row) * stride + col, 16u);
    }
  };
  if (t_begin < t_end) copy(k_st, k, ks, t_begin);
  ts::tc::cp_async_commit_group();
  if (t_begin < t_end) copy(v_st, v, vs, t_begin);
  ts::tc::cp_async_commit_group();
  uint32_t qa[kD / 16][4];
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    const uint32_t* q32 = reinterpret_cast<const uint32_t*>(q + kk * 16);
    qa[kk][0] = g == 0 ? q32[t4] : 0u;
    qa[kk][1] = 0u;
    qa[kk][2] = g == 0 ? q32[4 + t4] : 0u;
    qa[kk][3] = 0u;
  }
  float o[kD / 8][4];
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const float scale = p.scale;
  const int mi = lane / 8, ri = lane % 8;
  for (int t = t_begin; t < t_end; ++t) {
    ts::tc::cp_async_wait_group<1>();  // K(t) landed; V(t) may be in flight
    __syncwarp();
    float sc[kNB][4] = {};
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
#pragma unroll
      for (int h = 0; h < kNB / 2; ++h) {
        uint32_t b[4];
        ts::tc::ldmatrix<4>(b, k_st + (h * 16 + (mi >> 1) * 8 + ri) * kLK + kk * 16 + (mi & 1) * 8);
        const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
        ts::tc::mma_m16n8k16_bf16(sc[2 * h], qa[kk], b0, sc[2 * h]);
        ts::tc::mma_m16n8k16_bf16(sc[2 * h + 1], qa[kk], b1, sc[2 * h + 1]);
      }
    }
    __syncwarp();
    if (t + 1 < t_end) copy(k_st, k, ks, t + 1);
    ts::tc::cp_async_commit_group();
    float x[2 * kNB];
#pragma unroll
    for (int n = 0; n < kNB; ++n) { x[2 * n] = sc[n][0] * scale; x[2 * n + 1] = sc[n][1] * scale; }
    float mx = x[0];
#pragma unroll
    for (int i = 1; i < 2 * kNB; ++i) mx = fmaxf(mx, x[i]);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m, mx);
    const float alpha = __expf(m - m_new);
    float pr[2 * kNB], sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 2 * kNB; ++i) { pr[i] = __expf(x[i] - m_new); sum += pr[i]; }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    l = l * alpha + sum;
    m = m_new;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) { o[n][0] *= alpha; o[n][1] *= alpha; }
    ts::tc::cp_async_wait_group<1>();  // V(t) landed; K(t+1) may be in flight
    __syncwarp();
#pragma unroll
    for (int kc = 0; kc < kKw / 16; ++kc) {  // 16 keys a k-step
      const uint32_t pa[4] = {pack_bf16(pr[4 * kc], pr[4 * kc + 1]), 0u, pack_bf16(pr[4 * kc + 2], pr[4 * kc + 3]), 0u};
#pragma unroll
      for (int dp = 0; dp < kD / 16; ++dp) {
        uint32_t b[4];
        ts::tc::ldmatrix_trans<4>(b, v_st + (kc * 16 + (mi & 1) * 8 + ri) * kLK + dp * 16 + (mi >> 1) * 8);
        const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
        ts::tc::mma_m16n8k16_bf16(o[2 * dp], pa, b0, o[2 * dp]);
        ts::tc::mma_m16n8k16_bf16(o[2 * dp + 1], pa, b1, o[2 * dp + 1]);
      }
    }
    __syncwarp();
    if (t + 1 < t_end) copy(v_st, v, vs, t + 1);
    ts::tc::cp_async_commit_group();
  }
  ts::tc::cp_async_wait_all();
  store_block_state<kFinal>(p, wo, o, m, l, batch, head, split);
}
}  // namespace proto_tile128

// The roof for the decode's reads: K and V read once (16-byte loads, kLoads in flight a thread,
// each thread folding what it read into one word so that nothing is optimised away), by
// `parts` blocks of `threads` threads per (batch, head), each block a contiguous share of the
// head's keys; no arithmetic. parts = 1, threads = 128 is the decode's grid.
template <int kLoads>
__global__ void read_kv(const uint4* k, const uint4* v, size_t head_vecs, int parts, unsigned* sink) {
  const size_t share = head_vecs / parts;
  const size_t base = (static_cast<size_t>(blockIdx.z) * gridDim.y + blockIdx.y) * head_vecs + blockIdx.x * share;
  unsigned acc = 0;
  for (size_t i = threadIdx.x; i < share; i += static_cast<size_t>(blockDim.x) * kLoads) {
    uint4 a[kLoads], b[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const size_t j = i + static_cast<size_t>(u) * blockDim.x;
      a[u] = j < share ? k[base + j] : uint4{};
      b[u] = j < share ? v[base + j] : uint4{};
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) acc ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w ^ b[u].x ^ b[u].y ^ b[u].z ^ b[u].w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;  // practically never; keeps the loads
}

template <typename T>
void read_roof(const Bench<T>& b) {
  unsigned* sink = nullptr;
  check(cudaMalloc(&sink, sizeof(unsigned)), "malloc sink");
  const size_t head_vecs = size_t(b.s.seq_kv) * b.s.d * sizeof(T) / 16;
  const double bytes = 2.0 * b.kv_elems() * sizeof(T);
  auto time = [&](auto kernel, int loads, int parts, int threads) {
    auto launch = [&] {
      kernel<<<dim3(parts, b.s.heads, b.s.batch), threads>>>(reinterpret_cast<const uint4*>(b.k),
                                                              reinterpret_cast<const uint4*>(b.v), head_vecs, parts, sink);
    };
    const double ms = median_ms_of(launch, 20);
    std::printf("read K and V only: %d block(s) of %3d threads a head, %2d loads of K and V in flight a thread: %.4f ms  %6.0f GB/s\n",
                parts, threads, loads, ms, bytes / ms / 1e6);
  };
  time(read_kv<4>, 4, 1, 128);
  time(read_kv<8>, 8, 1, 128);
  time(read_kv<8>, 8, 1, 256);
  time(read_kv<4>, 4, 4, 256);
  time(read_kv<8>, 8, 4, 256);
  cudaFree(sink);
}

template <typename T>
int run(const Shape& shape, uint64_t seed, const char* out_path, bool roof) {
  Bench<T> b;
  b.s = shape;
  b.seed = seed;
  b.setup();
  if (roof) read_roof(b);
  const int elem = static_cast<int>(sizeof(T));
  const void* reduce = reinterpret_cast<const void*>(&ts::splitk_reduce_kernel<T, KernelVariant::plain>);
  const void* reduce_traced = reinterpret_cast<const void*>(&ts::splitk_reduce_kernel<T, KernelVariant::traced>);
  const size_t smem = static_cast<size_t>(ts::splitk_partial_smem_bytes(128, elem));
  bool ok = true;
  std::vector<unsigned char> o_bytes;
  ok &= b.variant("plain", reinterpret_cast<const void*>(&ts::splitk_partial_kernel<T, 128, KernelVariant::plain>),
                  reduce, smem, &o_bytes);
  ok &= b.variant("traced, nothing recorded",
                  reinterpret_cast<const void*>(&ts::splitk_partial_kernel<T, 128, KernelVariant::traced>),
                  reduce_traced, smem);
  if (shape.splits == 1) {  // what the launcher runs at one split (LaunchPlan::partial_writes_output)
    b.p.partial_writes_output = 1;
    ok &= b.variant("plain, writing O (no reduce)",
                    reinterpret_cast<const void*>(&ts::splitk_partial_kernel<T, 128, KernelVariant::plain>), nullptr,
                    smem);
    ok &= b.variant("traced nothing, writing O",
                    reinterpret_cast<const void*>(&ts::splitk_partial_kernel<T, 128, KernelVariant::traced>), nullptr,
                    smem);
    b.p.partial_writes_output = 0;
  }
  if constexpr (sizeof(T) == 2) {
    if (shape.splits == 1 || shape.splits % 2 == 0)
      ok &= b.variant("prototype: mma, 128-key tiles", reinterpret_cast<const void*>(&proto_tile128::partial<false>),
                      reduce, static_cast<size_t>(proto_tile128::kSmem));
    if (shape.splits == 1) {
      ok &= b.variant("prototype: mma, 128-key, no reduce", reinterpret_cast<const void*>(&proto_tile128::partial<true>),
                      nullptr, static_cast<size_t>(proto_tile128::kSmem));
      ok &= b.variant("prototype: mma, 64-key K/V bufs, no reduce",
                      reinterpret_cast<const void*>(&proto_tile128::partial<true, 16>), nullptr,
                      static_cast<size_t>(proto_tile128::kSmemOf<16>));
    }
  }
  if (out_path != nullptr) {
    FILE* f = std::fopen(out_path, "wb");
    if (f == nullptr || std::fwrite(o_bytes.data(), 1, o_bytes.size(), f) != o_bytes.size()) {
      std::fprintf(stderr, "cannot write %s\n", out_path);
      return 2;
    }
    std::fclose(f);
  }
  return ok ? 0 : 1;
}

double copy_gbps() {  // device-to-device copy of 2 GiB, bytes read + written
  const size_t n = size_t{2} << 30;
  void *a = nullptr, *b = nullptr;
  check(cudaMalloc(&a, n), "malloc copy");
  check(cudaMalloc(&b, n), "malloc copy");
  check(cudaMemset(a, 1, n), "memset");
  const double ms = median_ms_of([&] { check(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice), "copy"); }, 5);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * n / ms / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  Shape shape;
  std::string dtype = "bf16";
  uint64_t seed = 1;
  const char* out = nullptr;
  bool copy = false, roof = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--dtype") dtype = next();
    else if (a == "--batch") shape.batch = std::atoi(next());
    else if (a == "--splits") shape.splits = std::atoi(next());
    else if (a == "--blocks") shape.blocks = std::atoi(next());
    else if (a == "--seed") seed = std::strtoull(next(), nullptr, 10);
    else if (a == "--out") out = next();
    else if (a == "--copy") copy = true;
    else if (a == "--roof") roof = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  const int kv_tiles = static_cast<int>(ts::ceil_div(shape.seq_kv, ts::splitk_block_n(shape.d)));
  if (shape.batch < 1 || shape.splits < 1 || shape.splits > kv_tiles || shape.blocks < 0) {
    std::fprintf(stderr, "--batch >= 1, 1 <= --splits <= %d (the kv tiles), --blocks >= 0\n", kv_tiles);
    return 2;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  std::printf("%s, %d SMs; B=%d H=%d Sq=1 Skv=%d D=%d %s; splits %d, at most %d blocks/SM\n", prop.name,
              prop.multiProcessorCount, shape.batch, shape.heads, shape.seq_kv, shape.d, dtype.c_str(), shape.splits,
              shape.blocks);
  if (copy) std::printf("device-to-device copy: %.0f GB/s (read + written)\n", copy_gbps());
  if (dtype == "bf16") return run<__nv_bfloat16>(shape, seed, out, roof);
  if (dtype == "f32") return run<float>(shape, seed, out, roof);
  std::fprintf(stderr, "--dtype: bf16 or f32\n");
  return 2;
}
