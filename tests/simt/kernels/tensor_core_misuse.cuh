// Kernels that misuse tensor-core operations. On a GPU they are undefined behaviour (a hang, a
// fault, garbage), so they are only built by nvcc (to prove they are valid CUDA) and run on
// the CPU runtime, whose report must name the thread or warp and the line (found by the marker
// comment at the end of it). One warp of 32 threads unless said otherwise; out[] is written by
// threads that get through.
//
//   mma_lane_exits_kernel: lane `exiting` returns before the mma the others execute.
//   mma_lane_at_barrier_kernel: lane 31 waits in __syncthreads instead of the mma.
//   mma_two_places_kernel: lanes 0-15 execute an mma at one line, lanes 16-31 at another.
//   ldmatrix_during_mma_kernel: lane 0 executes ldmatrix while the others execute an mma.
//   mma_partial_warp_kernel: a block of 48 threads, whose second warp has 16 lanes.
//   ldmatrix_misaligned_kernel: lane 5 passes a row address 2 bytes past a 16-byte boundary.
//   cp_async_misaligned_kernel: thread 3 copies 16 bytes to an address 4 bytes off alignment.
//   cp_async_oversized_kernel: a 16-byte cp.async asked to read 20 source bytes.
//   wmma_pointer_disagreement_kernel: lane 7 loads a wmma fragment from another pointer.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/simt/tensor_core.h"
#include "instrumentation/simt/wmma.h"

namespace ts::test {

// A lane's harmless mma operands: A and B all ones (0x3c00 is fp16 1.0), C = lane.
struct MisuseOperands {
  uint32_t a[4] = {0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
  uint32_t b[2] = {0x3c003c00u, 0x3c003c00u};
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
};

__global__ void mma_lane_exits_kernel(float* out, unsigned exiting) {
  if (threadIdx.x % 32 == exiting) return;
  MisuseOperands op;
  float d[4];
  ts::tc::mma_m16n8k16_f16(d, op.a, op.b, op.c);  // marker: mma lane exits
  out[threadIdx.x] = d[0];
}

__global__ void mma_lane_at_barrier_kernel(float* out) {
  MisuseOperands op;
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (threadIdx.x % 32 == 31) {
    __syncthreads();  // marker: lane at barrier
  } else {
    ts::tc::mma_m16n8k16_f16(d, op.a, op.b, op.c);  // marker: mma without lane 31
  }
  out[threadIdx.x] = d[0];
}

__global__ void mma_two_places_kernel(float* out) {
  MisuseOperands op;
  float d[4];
  if (threadIdx.x % 32 < 16) {
    ts::tc::mma_m16n8k16_f16(d, op.a, op.b, op.c);  // marker: mma low half
  } else {
    ts::tc::mma_m16n8k16_f16(d, op.a, op.b, op.c);  // marker: mma high half
  }
  out[threadIdx.x] = d[0];
}

__global__ void ldmatrix_during_mma_kernel(float* out) {
  __shared__ __align__(16) uint16_t tile[32 * 8];
  for (unsigned i = threadIdx.x; i < 32 * 8; i += blockDim.x) tile[i] = static_cast<uint16_t>(i);
  __syncthreads();
  MisuseOperands op;
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (threadIdx.x % 32 == 0) {
    uint32_t r[4];
    ts::tc::ldmatrix(r, tile + 8 * (threadIdx.x % 32));  // marker: ldmatrix among mma
    d[0] = static_cast<float>(r[0]);
  } else {
    ts::tc::mma_m16n8k16_f16(d, op.a, op.b, op.c);  // marker: mma beside ldmatrix
  }
  out[threadIdx.x] = d[0];
}

__global__ void mma_partial_warp_kernel(float* out) {
  MisuseOperands op;
  float d[4];
  ts::tc::mma_m16n8k16_f16(d, op.a, op.b, op.c);  // marker: mma partial warp
  out[threadIdx.x] = d[0];
}

__global__ void ldmatrix_misaligned_kernel(uint32_t* out) {
  TS_DYNAMIC_SHARED(uint16_t, tile);
  for (unsigned i = threadIdx.x; i < 32 * 8 + 8; i += blockDim.x)
    tile[i] = static_cast<uint16_t>(i);
  __syncthreads();
  const unsigned lane = threadIdx.x % 32;
  const uint16_t* row = tile + 8 * lane + (lane == 5 ? 1 : 0);
  uint32_t r[4];
  ts::tc::ldmatrix(r, row);  // marker: ldmatrix misaligned
  out[threadIdx.x] = r[0];
}

__global__ void cp_async_misaligned_kernel(const uint32_t* src, uint32_t* out) {
  TS_DYNAMIC_SHARED(uint32_t, shared);
  const unsigned t = threadIdx.x;
  uint32_t* dst = shared + 8 * t + (t == 3 ? 1 : 0);
  ts::tc::cp_async_cg(dst, src + 4 * t);  // marker: cp.async misaligned
  ts::tc::cp_async_wait_all();
  out[t] = dst[0];
}

__global__ void cp_async_oversized_kernel(const uint32_t* src, uint32_t* out) {
  TS_DYNAMIC_SHARED(uint32_t, shared);
  const unsigned t = threadIdx.x;
  ts::tc::cp_async_ca_zfill<16>(shared + 4 * t, src + 4 * t, 20);  // marker: cp.async oversized
  ts::tc::cp_async_wait_all();
  out[t] = shared[4 * t];
}

__global__ void wmma_pointer_disagreement_kernel(const __half* a, float* out) {
  namespace wmma = nvcuda::wmma;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  const __half* mine = threadIdx.x % 32 == 7 ? a + 16 * 16 : a;
  wmma::load_matrix_sync(fa, mine, 16);  // marker: wmma pointers disagree
  out[threadIdx.x] = __half2float(fa.x[0]);
}

}  // namespace ts::test
