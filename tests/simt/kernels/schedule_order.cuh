// The order in which a block's threads run, made visible.
//
//   ticket_kernel: each thread takes a ticket from its block's counter (atomicAdd) when it
//     starts (first[i]) and again after a __syncthreads (second[i], counted from 0 again).
//     On the CPU runtime the tickets are the order the fibers ran in: 0..N-1 by default, a
//     seeded permutation in perturbation mode. counters[] must start at 0. CPU-only use (on a
//     GPU the order is the hardware's).
#pragma once

#include "instrumentation/simt/cuda_compat.h"

namespace ts::test {

__global__ void ticket_kernel(unsigned* counters, unsigned* first, unsigned* second) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  first[i] = atomicAdd(&counters[blockIdx.x], 1u);
  __syncthreads();
  second[i] = atomicAdd(&counters[blockIdx.x], 1u) - blockDim.x;
}

}  // namespace ts::test
