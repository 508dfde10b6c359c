// Kernels with synchronisation bugs. On a GPU they hang or corrupt memory, so they are only
// built by nvcc (to prove they are valid CUDA) and run on the CPU runtime, whose report must
// name the block, the thread and the line (found by the marker comment at the end of it).
//
//   deadlock_kernel: lanes 0..15 of each warp wait in __syncwarp, the rest in __syncthreads.
//   divergent_barrier_kernel: even threads and odd threads call __syncthreads from two places.
//   exit_before_barrier_kernel: thread `exiting` returns; the others call __syncthreads.
//   warp_mask_disagreement_kernel: lane 0 calls __syncwarp(full mask), lanes 1..15 with 0xffff.
//   warp_op_disagreement_kernel: even lanes shuffle while odd lanes ballot, same mask.
//   mask_omits_lane_kernel: each lane names only its neighbour in the mask.
//   bad_width_kernel: a shuffle of width 12 (not a power of two).
//   trap_kernel: thread `trapping` calls __trap().
//
// out[] is written by threads that get through, so the kernels have an observable effect.
#pragma once

#include "instrumentation/simt/cuda_compat.h"

namespace ts::test {

__global__ void deadlock_kernel(int* out) {
  if (threadIdx.x % 32 < 16) {
    __syncwarp();  // marker: deadlock syncwarp
  } else {
    __syncthreads();  // marker: deadlock syncthreads
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

__global__ void divergent_barrier_kernel(int* out) {
  if (threadIdx.x % 2 == 0) {
    __syncthreads();  // marker: divergent even
  } else {
    __syncthreads();  // marker: divergent odd
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

__global__ void exit_before_barrier_kernel(int* out, unsigned exiting) {
  if (threadIdx.x == exiting) return;
  __syncthreads();  // marker: exit barrier
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

__global__ void warp_mask_disagreement_kernel(int* out) {
  const unsigned lane = threadIdx.x % 32;
  if (lane < 16) {
    const unsigned mask = lane == 0 ? 0xffffffffu : 0x0000ffffu;
    __syncwarp(mask);  // marker: mask disagreement
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

__global__ void warp_op_disagreement_kernel(int* out) {
  const int v = static_cast<int>(threadIdx.x);
  int r;
  if (threadIdx.x % 2 == 0) {
    r = __shfl_xor_sync(0xffffffffu, v, 1);  // marker: op disagreement shuffle
  } else {
    r = static_cast<int>(__ballot_sync(0xffffffffu, 1));  // marker: op disagreement ballot
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

__global__ void mask_omits_lane_kernel(int* out) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned neighbour_only = 1u << ((lane + 1) % 32);
  out[blockIdx.x * blockDim.x + threadIdx.x] =
      __shfl_sync(neighbour_only, static_cast<int>(lane), 0);  // marker: mask omits lane
}

__global__ void bad_width_kernel(int* out) {
  const int v = static_cast<int>(threadIdx.x);
  out[blockIdx.x * blockDim.x + threadIdx.x] =
      __shfl_down_sync(0xffffffffu, v, 1, 12);  // marker: bad width
}

__global__ void trap_kernel(int* out, unsigned trapping) {
  if (threadIdx.x == trapping) __trap();  // marker: trap
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

}  // namespace ts::test
