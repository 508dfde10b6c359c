// Copies a tile of rows x head_dim input elements from global memory into a float tile in
// shared memory (row stride kLd floats), 8 elements (one 16-byte vector of fp16/bf16, two of
// fp32) per thread and step, consecutive threads on consecutive vectors (coalesced). Rows past
// `valid_rows` are zero-filled so that masked keys multiply zeros, never stale NaN.
//
// TileLoader splits the copy in two so a kernel can keep a tile's loads in flight while it
// computes on the previous one: fetch() issues the global loads into registers, store()
// converts and writes them to shared memory.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "kernels/device/unroll.cuh"
#include "kernels/device/smem_vec.cuh"
#include "kernels/device/vec_io.cuh"

namespace ts::device {

template <typename T, int kD, int kRows, int kThreads>
struct TileLoader {
  static constexpr int kVecPerRow = kD / 8;
  static constexpr int kVecs = kRows * kVecPerRow;
  static constexpr int kPerThread = (kVecs + kThreads - 1) / kThreads;
  static_assert(kD % 8 == 0, "head_dim must be a multiple of 8");

  Raw8<T> raw[kPerThread] = {};  // zero until fetched (and never read before: see the kernels)

  // Loads rows [0, valid_rows) of the tile starting at `base` (row stride in elements).
  __device__ __forceinline__ void fetch(const T* base, int64_t row_stride, int valid_rows,
                                        int tid) {
    TS_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int e = tid + i * kThreads;
      const int row = e / kVecPerRow, col = (e % kVecPerRow) * 8;
      raw[i] = (e < kVecs && row < valid_rows) ? load_raw8(base + row * row_stride + col)
                                               : zero_raw8<T>();
    }
  }

  // Writes the fetched vectors, times `mul`, to the shared tile.
  template <int kLd>
  __device__ __forceinline__ void store(float* tile, int tid, float mul = 1.0f) const {
    TS_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int e = tid + i * kThreads;
      if (e < kVecs) {
        float f[8];
        raw8_to_float(raw[i], f);
        TS_UNROLL
        for (int x = 0; x < 8; ++x) f[x] *= mul;
        store_f8(tile + (e / kVecPerRow) * kLd + (e % kVecPerRow) * 8, f);
      }
    }
  }

  // Writes the fetched vectors as they are (the input dtype) to a shared tile of row stride kLd
  // elements (e.g. kernel_smem.h: splitk_tile_ld); the kernel converts elements as it reads them.
  template <int kLd>
  __device__ __forceinline__ void store_raw(T* tile, int tid) const {
    TS_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int e = tid + i * kThreads;
      if (e < kVecs) store_raw8(tile + (e / kVecPerRow) * kLd + (e % kVecPerRow) * 8, raw[i]);
    }
  }
};

// fetch + store in one go, for tiles that are not pipelined.
template <typename T, int kD, int kRows, int kThreads, int kLd>
__device__ __forceinline__ void load_tile(const T* base, int64_t row_stride, int valid_rows,
                                          float* tile, int tid, float mul = 1.0f) {
  TileLoader<T, kD, kRows, kThreads> loader;
  loader.fetch(base, row_stride, valid_rows, tid);
  loader.template store<kLd>(tile, tid, mul);
}

}  // namespace ts::device
