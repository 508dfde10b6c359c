// Plain types and sizes shared by the test kernels (kernels/*.cuh, both compilers) and the
// host-side test bodies, which must not include the kernels themselves (the GPU test program
// compiles its test bodies with the host compiler and its kernels with nvcc).
#pragma once

#if defined(__CUDACC__)
#define SIMT_TEST_HOST_DEVICE __host__ __device__
#else
#define SIMT_TEST_HOST_DEVICE
#endif

namespace simt_test {

struct AtomicTotals {
  int sum;
  int difference;  // starts at 0, minus every value
  unsigned unsigned_sum;
  unsigned long long wide_sum;
  float float_sum;
  int max;
  int min;
  unsigned unsigned_max;
  unsigned unsigned_min;
  unsigned bits_and;
  unsigned bits_or;
  unsigned bits_xor;
  unsigned wrapping_count;  // atomicInc with limit kWrapLimit
  int cas_max;
  double cas_double_sum;
  int exchanged;
};

inline constexpr unsigned kWrapLimit = 1000;

struct ThreadRecord {
  unsigned thread[3];
  unsigned block[3];
  unsigned block_dim[3];
  unsigned grid_dim[3];
};

// Dynamic shared memory layout of reverse_in_shared_kernel: floats, then doubles at a
// 16-byte aligned offset.
SIMT_TEST_HOST_DEVICE inline unsigned doubles_offset_bytes(unsigned threads) {
  return (threads * static_cast<unsigned>(sizeof(float)) + 15u) / 16u * 16u;
}
SIMT_TEST_HOST_DEVICE inline unsigned reverse_in_shared_bytes(unsigned threads) {
  return doubles_offset_bytes(threads) + threads * static_cast<unsigned>(sizeof(double));
}

}  // namespace simt_test
