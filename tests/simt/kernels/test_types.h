// Plain types and sizes shared by the test kernels (kernels/*.cuh, both compilers) and the
// host-side test bodies, which must not include the kernels themselves (the GPU test program
// compiles its test bodies with the host compiler and its kernels with nvcc).
#pragma once

#if defined(__CUDACC__)
#define SIMT_TEST_HOST_DEVICE __host__ __device__
#else
#define SIMT_TEST_HOST_DEVICE
#endif

namespace ts::test {

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

// Tensor-core tests (tensor_core.cuh).

// async_copy_kernel: one block of kAsyncCopyThreads threads; regions of dynamic shared memory
// (in 32-bit words) that each thread fills with cp.async from the same words of `src`:
//   thread t: [4t, +4) ca 16 B | [128 + 2t, +2) ca 8 B | [192 + t] ca 4 B | [224 + 4t, +4) cg 16 B
//             | [352 + 4t, +4) ca 16 B zero-filled past async_copy_zfill_bytes(t)
//             | [480 + 4t, +4) cg 16 B zero-filled past 16 - async_copy_zfill_bytes(t)
//   (group 0), then [608 + 4t, +4) cg 16 B (group 1).
inline constexpr unsigned kAsyncCopyThreads = 32;
inline constexpr unsigned kAsyncCopyGroup1Word = 608;
inline constexpr unsigned kAsyncCopyWords = 736;
SIMT_TEST_HOST_DEVICE inline unsigned async_copy_zfill_bytes(unsigned thread) {
  return thread * 3 % 17;  // 0..16
}
// What the kernel does between issuing and reading (its out[] holds 3 snapshots of
// kAsyncCopyWords words, each thread writing only the words it copied):
//   wait_groups: wait_group<1>; snapshot 0 = group 0's words, snapshot 1 = group 1's words;
//                wait_group<0>; snapshot 2 = group 1's words.
//   wait_all:    (group 1 never committed) wait_all; snapshot 0 and snapshot 2 as above.
//   no_wait:     the snapshots of wait_groups without any wait (CPU only: a race on a GPU).
enum class AsyncCopyMode : int { wait_groups = 0, wait_all = 1, no_wait = 2 };

// wmma_kernel: each warp of the block multiplies its own 16 x 16 matrices, stored with a
// leading dimension of kWmmaLdm elements, kWmmaTileElements apart.
inline constexpr unsigned kWmmaLdm = 24;
inline constexpr unsigned kWmmaTileElements = 16 * kWmmaLdm;

// attention_tile_kernel: per block (one warp) Q 16x16, K 16x16 ([key][dim]), V 16x8
// ([key][dim]), as 16-bit patterns, kAttentionTileElements apart.
inline constexpr unsigned kAttentionTileElements = 16 * 16 + 16 * 16 + 16 * 8;

}  // namespace ts::test
