// Dynamic shared memory (TS_DYNAMIC_SHARED), sized at launch.
//
//   reverse_in_shared_kernel: each block copies its blockDim.x floats into dynamic shared
//     memory and writes them back reversed; a second view of the same memory (doubles, after
//     the floats, 16-byte aligned) carries each value doubled. out_reversed[i], out_doubled[i];
//     misaligned[b] = 1 if the block saw a dynamic shared pointer not aligned to 16 bytes.
//     Needs dynamic_shared_bytes >= reverse_in_shared_bytes(blockDim.x) (test_types.h).
//   read_unwritten_shared_kernel: even blocks write 1.0f to their dynamic shared memory, odd
//     blocks do not; every thread then reads it: out[i]. On the CPU the runtime poisons the
//     memory at each block start, so odd blocks read NaN even after an even block used the
//     same memory on the same worker (on a GPU: whatever was there). CPU-only use.
//
// Run by tests/simt/test_kernels.cpp (both backends) and test_runtime.cpp (CPU).
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "tests/simt/kernels/test_types.h"

namespace ts::test {

__global__ void reverse_in_shared_kernel(const float* in, float* out_reversed, double* out_doubled,
                                         int* misaligned) {
  TS_DYNAMIC_SHARED(float, values);
  TS_DYNAMIC_SHARED(unsigned char, raw);
  double* doubled = reinterpret_cast<double*>(raw + doubles_offset_bytes(blockDim.x));
  const unsigned t = threadIdx.x;
  const unsigned base = blockIdx.x * blockDim.x;
  values[t] = in[base + t];
  doubled[t] = 2.0 * static_cast<double>(in[base + t]);
  __syncthreads();
  const unsigned mirror = blockDim.x - 1 - t;
  out_reversed[base + t] = values[mirror];
  out_doubled[base + t] = doubled[mirror];
  if (t == 0) misaligned[blockIdx.x] = (reinterpret_cast<unsigned long long>(values) % 16) != 0;
}

__global__ void read_unwritten_shared_kernel(float* out) {
  TS_DYNAMIC_SHARED(float, values);
  if (blockIdx.x % 2 == 0) {
    values[threadIdx.x] = 1.0f;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = values[threadIdx.x];
}

}  // namespace ts::test
