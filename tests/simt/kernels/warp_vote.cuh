// Warp votes and matches over the lanes of a mask.
//
//   warp_vote_kernel: lanes named in `mask` vote with pred[i] and write
//     out[5*i + 0] = __ballot_sync, 1 = __any_sync, 2 = __all_sync,
//     3 = __match_any_sync(key[i]), 4 = __reduce_add_sync(key[i]).
//     Lanes outside the mask write nothing.
//
// Run by tests/simt/test_kernels.cpp on both backends.
#pragma once

#include "instrumentation/simt/cuda_compat.h"

namespace ts::test {

__global__ void warp_vote_kernel(const int* pred, const unsigned* key, unsigned* out,
                                 unsigned mask) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (((mask >> (threadIdx.x % 32)) & 1u) == 0) return;
  const int p = pred[i];
  out[5 * i + 0] = __ballot_sync(mask, p);
  out[5 * i + 1] = static_cast<unsigned>(__any_sync(mask, p));
  out[5 * i + 2] = static_cast<unsigned>(__all_sync(mask, p));
  out[5 * i + 3] = __match_any_sync(mask, key[i]);
  out[5 * i + 4] = __reduce_add_sync(mask, key[i]);
}

}  // namespace ts::test
