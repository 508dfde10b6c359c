// 3-D grids and blocks: every thread records its coordinates.
//
//   coordinates_kernel: out[g] = {threadIdx, blockIdx, blockDim, gridDim} of the thread whose
//     global linear index (x fastest: thread within block, then block within grid) is g.
//
// Run by tests/simt/test_kernels.cpp on both backends.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "tests/simt/kernels/test_types.h"

namespace ts::test {

__global__ void coordinates_kernel(ThreadRecord* out) {
  const unsigned threads_per_block = blockDim.x * blockDim.y * blockDim.z;
  const unsigned thread_linear =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned block_linear = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  ThreadRecord& r = out[block_linear * threads_per_block + thread_linear];
  r.thread[0] = threadIdx.x;
  r.thread[1] = threadIdx.y;
  r.thread[2] = threadIdx.z;
  r.block[0] = blockIdx.x;
  r.block[1] = blockIdx.y;
  r.block[2] = blockIdx.z;
  r.block_dim[0] = blockDim.x;
  r.block_dim[1] = blockDim.y;
  r.block_dim[2] = blockDim.z;
  r.grid_dim[0] = gridDim.x;
  r.grid_dim[1] = gridDim.y;
  r.grid_dim[2] = gridDim.z;
}

}  // namespace ts::test
