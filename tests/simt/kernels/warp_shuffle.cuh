// Warp shuffles: every flavour, every width, partial masks, several value types.
//
//   shuffle_flavours_kernel<T>: lanes named in `mask` shuffle their in[] value with each
//     flavour and write out[4*i + 0..3] = idx(lane_arg), up(lane_arg), down(lane_arg),
//     xor(lane_arg), all with `width`. Lanes outside the mask write nothing.
//   warp_reduce_kernel: groups of `width` lanes of int values:
//     out[4*i+0] = group sum by a shfl_xor butterfly (every lane),
//     out[4*i+1] = group sum by shfl_down (meaningful on the group's first lane),
//     out[4*i+2] = inclusive prefix sum by shfl_up,
//     out[4*i+3] = the group's first-lane sum broadcast by shfl (idx).
//
// Run by tests/simt/test_kernels.cpp on both backends; expected values are computed on the
// host from the PTX definition of shfl.sync.
#pragma once

#include "instrumentation/simt/cuda_compat.h"

namespace ts::test {

template <typename T>
__global__ void shuffle_flavours_kernel(const T* in, T* out, unsigned mask, int lane_arg,
                                        int width) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x % 32;
  if (((mask >> lane) & 1u) == 0) return;
  const T v = in[i];
  out[4 * i + 0] = __shfl_sync(mask, v, lane_arg, width);
  out[4 * i + 1] = __shfl_up_sync(mask, v, static_cast<unsigned>(lane_arg), width);
  out[4 * i + 2] = __shfl_down_sync(mask, v, static_cast<unsigned>(lane_arg), width);
  out[4 * i + 3] = __shfl_xor_sync(mask, v, lane_arg, width);
}

__global__ void warp_reduce_kernel(const int* in, int* out, int width) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane_in_group = (threadIdx.x % 32) % static_cast<unsigned>(width);
  const int v = in[i];

  int butterfly = v;
  for (int offset = width / 2; offset > 0; offset /= 2) {
    butterfly += __shfl_xor_sync(0xffffffffu, butterfly, offset, width);
  }
  int down = v;
  for (int offset = width / 2; offset > 0; offset /= 2) {
    down += __shfl_down_sync(0xffffffffu, down, static_cast<unsigned>(offset), width);
  }
  int scan = v;
  for (int offset = 1; offset < width; offset *= 2) {
    const int from_below = __shfl_up_sync(0xffffffffu, scan, static_cast<unsigned>(offset), width);
    if (lane_in_group >= static_cast<unsigned>(offset)) scan += from_below;
  }
  const int broadcast = __shfl_sync(0xffffffffu, down, 0, width);

  out[4 * i + 0] = butterfly;
  out[4 * i + 1] = down;
  out[4 * i + 2] = scan;
  out[4 * i + 3] = broadcast;
}

}  // namespace ts::test
