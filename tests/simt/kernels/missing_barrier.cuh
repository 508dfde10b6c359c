// A shared-memory tile read before every thread has written it: the race tilescope's
// `missing_barrier` fault variant has, in miniature.
//
//   shifted_tile_sum_kernel<kWithBarrier>: for each of `tiles` tiles, every thread stores its
//     element of the tile in dynamic shared memory, then adds its right neighbour's element:
//     out[i] = sum over tiles k of in[b*tiles*n + k*n + (t+1) % n], n = blockDim.x.
//     kWithBarrier = false omits the __syncthreads between the store and the read, so the
//     neighbour's element may not be written yet (or still hold the previous tile). Needs
//     dynamic_shared_bytes = blockDim.x * sizeof(float).
//
//   warp_synced_tile_sum_kernel<kWithBarrier>: the same sum with the neighbour one warp further on,
//     out[i] = sum over tiles k of in[b*tiles*n + k*n + (t+32) % n], and the racy variant's
//     barrier a __syncwarp: it orders the warp's own lanes only, so the neighbour warp may not
//     have stored its element yet. (Each warp reaches its __syncwarp only after storing, so a
//     schedule that keeps the warps in step across warp operations never shows the race.)
//
// On the CPU the racy variants' results change with LaunchOptions::perturb_seed
// (tests/simt/test_scheduling.cpp); the correct ones give the same result for every seed.
#pragma once

#include "instrumentation/simt/cuda_compat.h"

namespace ts::test {

template <bool kWithBarrier>
__global__ void shifted_tile_sum_kernel(const float* in, float* out, int tiles) {
  TS_DYNAMIC_SHARED(float, tile);
  const unsigned n = blockDim.x;
  const unsigned t = threadIdx.x;
  const float* block_in = in + static_cast<size_t>(blockIdx.x) * tiles * n;
  float sum = 0.0f;
  for (int k = 0; k < tiles; ++k) {
    tile[t] = block_in[static_cast<size_t>(k) * n + t];
    if (kWithBarrier) __syncthreads();  // the barrier the racy variant misses
    sum += tile[(t + 1) % n];
    __syncthreads();  // nobody overwrites the tile before everyone has read it
  }
  out[blockIdx.x * n + t] = sum;
}

template <bool kWithBarrier>
__global__ void warp_synced_tile_sum_kernel(const float* in, float* out, int tiles) {
  TS_DYNAMIC_SHARED(float, tile);
  const unsigned n = blockDim.x;
  const unsigned t = threadIdx.x;
  const float* block_in = in + static_cast<size_t>(blockIdx.x) * tiles * n;
  float sum = 0.0f;
  for (int k = 0; k < tiles; ++k) {
    tile[t] = block_in[static_cast<size_t>(k) * n + t];
    if (kWithBarrier) {
      __syncthreads();
    } else {
      __syncwarp();  // the racy variant: a warp's barrier where the block's is needed
    }
    sum += tile[(t + 32) % n];
    __syncthreads();  // nobody overwrites the tile before everyone has read it
  }
  out[blockIdx.x * n + t] = sum;
}

}  // namespace ts::test
