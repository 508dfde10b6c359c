// Block reductions through static shared memory, and the reducing barriers.
//
//   block_sum_kernel: out[b] = sum of in[b*blockDim.x ...] (n elements in total; the tail block
//     is partial). Tree reduction in __shared__ memory with __syncthreads between levels; any
//     blockDim.x up to 1024 (not only powers of two).
//   block_vote_kernel: votes[3b..3b+2] = __syncthreads_count / _and / _or of pred[] over block b.
//
// Run by tests/simt/test_kernels.cpp on the CPU runtime (test_simt) and natively (test_simt_gpu).
#pragma once

#include "instrumentation/simt/cuda_compat.h"

namespace ts::test {

__global__ void block_sum_kernel(const float* in, float* out, int n) {
  __shared__ float partial[1024];
  const unsigned t = threadIdx.x;
  const unsigned i = blockIdx.x * blockDim.x + t;
  partial[t] = i < static_cast<unsigned>(n) ? in[i] : 0.0f;
  __syncthreads();
  unsigned half = 1;
  while (half * 2 < blockDim.x) half *= 2;
  for (; half > 0; half /= 2) {
    if (t < half && t + half < blockDim.x) partial[t] += partial[t + half];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

__global__ void block_vote_kernel(const int* pred, int* votes) {
  const int p = pred[blockIdx.x * blockDim.x + threadIdx.x];
  const int count = __syncthreads_count(p);
  const int all = __syncthreads_and(p);
  const int any = __syncthreads_or(p);
  if (threadIdx.x == 0) {
    votes[3 * blockIdx.x + 0] = count;
    votes[3 * blockIdx.x + 1] = all;
    votes[3 * blockIdx.x + 2] = any;
  }
}

}  // namespace ts::test
