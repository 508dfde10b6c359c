// Warp operations after a lane has exited. CUDA defines them over the non-exited lanes named in
// the mask, so these kernels are correct, but reading the exited lane's value is undefined.
//
//   exited_lane_shuffle_kernel: lane `exiting` of every warp returns at once; the others write
//     out[2*i] = __shfl_sync(full mask, v, exiting)   (undefined: the CPU runtime gives poison)
//     out[2*i+1] = __shfl_xor_sync(full mask, v, 1)   (v of the partner lane, if it is alive)
//     where v = threadIdx.x. Lane 31 exiting leaves lanes 0..30 already waiting for it (in the
//     CPU runtime's default order), so the exchange must complete when it exits.
//
// CPU only (tests/simt/test_cpu_warp_details.cpp): the undefined values differ on a GPU.
#pragma once

#include "instrumentation/simt/cuda_compat.h"

namespace ts::test {

__global__ void exited_lane_shuffle_kernel(int* out, unsigned exiting) {
  const unsigned lane = threadIdx.x % 32;
  if (lane == exiting) return;
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = static_cast<int>(threadIdx.x);
  out[2 * i] = __shfl_sync(0xffffffffu, v, static_cast<int>(exiting));
  out[2 * i + 1] = __shfl_xor_sync(0xffffffffu, v, 1);
}

}  // namespace ts::test
