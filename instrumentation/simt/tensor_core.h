// The tensor-core operations a tiled attention kernel needs, in one API for both executors
// (namespace ts::tc). Include it after instrumentation/simt/cuda_compat.h.
//
//   mma_m16n8k16_f16 / _bf16   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32
//   ldmatrix / ldmatrix_trans  ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16
//   cp_async_ca / cp_async_cg  cp.async.{ca,cg}.shared.global (4/8/16 bytes; _zfill forms with
//                              a src-size), cp_async_commit_group, cp_async_wait_group<N>,
//                              cp_async_wait_all
//   pack_halves                two fp16 or bf16 values as one .b32 register (low, high)
//
// Under nvcc, for sm_80 and later, each is the PTX instruction itself (older targets trap).
// Under the host compiler (TILESCOPE_SIMT_CPU) each is emulated by the SIMT runtime with the
// same registers in the same lanes (mma_fragment_layout.h says which element each holds):
//  * mma and ldmatrix are warp collectives: all 32 lanes of the warp must reach the same call,
//    as .sync.aligned requires. A partial warp, a lane that has exited (or exits while the others
//    wait), lanes at two different calls or two places, a lane waiting at a barrier instead
//    (deadlock), and a misaligned ldmatrix row are reported with the kernel's file:line.
//  * mma's arithmetic: exact products, fp32 sums in k order (kernel_api/tensor_core.h).
//  * cp.async reads its source at issue and writes its destination only at the wait that covers
//    its group (or at the thread's exit), so a kernel that reads the destination before waiting
//    sees the old contents (NaN in dynamic shared memory) every time, not only under load.
//    Misaligned addresses and a src-size above the copy size are reported.
// Costs on the CPU (docs/perf.md): an mma is one warp exchange plus 16x8x16 multiply-adds.
#pragma once

#include <cstdint>

#include "instrumentation/simt/mma_fragment_layout.h"

#if defined(TILESCOPE_SIMT_CPU)
#include "instrumentation/simt/kernel_api/tensor_core.h"
// The trailing parameter that carries the caller's file:line into the runtime's reports.
#define TS_TC_CALLER_PLACE , TS_SIMT_CALLER_PLACE
#else
#define TS_TC_CALLER_PLACE
#endif

// Under nvcc: the PTX needs sm_80 (mma with bf16, cp.async); other device targets trap.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TS_TC_PTX 1
#endif

namespace ts::tc {

__device__ __forceinline__ uint32_t pack_halves(__half low, __half high) {
  return uint32_t{__half_as_ushort(low)} | uint32_t{__half_as_ushort(high)} << 16;
}
__device__ __forceinline__ uint32_t pack_halves(__nv_bfloat16 low, __nv_bfloat16 high) {
  return uint32_t{__bfloat16_as_ushort(low)} | uint32_t{__bfloat16_as_ushort(high)} << 16;
}

// D = A * B + C for one warp: a[4] holds A's elements a0..a7 (16 x 16), b[2] B's b0..b3
// (16 x 8), c[4] and d[4] C's and D's c0..c3 (16 x 8, fp32). d may be c.
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const uint32_t (&a)[4],
                                                 const uint32_t (&b)[2],
                                                 const float (&c)[4] TS_TC_CALLER_PLACE) {
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::mma_m16n8k16<__half>(d, a, b, c, where);
#elif defined(TS_TC_PTX)
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4],
                                                  const uint32_t (&b)[2],
                                                  const float (&c)[4] TS_TC_CALLER_PLACE) {
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::mma_m16n8k16<__nv_bfloat16>(d, a, b, c, where);
#elif defined(TS_TC_PTX)
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// kMatrices (1, 2 or 4) 8x8 matrices of 16-bit elements from shared memory: lane 8m + r passes
// the address of row r of matrix m (16 bytes, 16-byte aligned); register m of each lane gets
// its two elements of matrix m (ldmatrix_trans: of the transposed matrix). Lanes 8*kMatrices
// and up pass an address too, which is not read.
template <int kMatrices>
__device__ __forceinline__ void ldmatrix(uint32_t (&r)[kMatrices],
                                         const void* shared_row TS_TC_CALLER_PLACE) {
  static_assert(kMatrices == 1 || kMatrices == 2 || kMatrices == 4, "ldmatrix loads 1, 2 or 4");
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::ldmatrix<kMatrices, false>(r, shared_row, where);
#elif defined(TS_TC_PTX)
  const auto row = static_cast<unsigned>(__cvta_generic_to_shared(shared_row));
  if constexpr (kMatrices == 1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0])
                 : "r"(row)
                 : "memory");
  } else if constexpr (kMatrices == 2) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(row)
                 : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row)
                 : "memory");
  }
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

template <int kMatrices>
__device__ __forceinline__ void ldmatrix_trans(uint32_t (&r)[kMatrices],
                                               const void* shared_row TS_TC_CALLER_PLACE) {
  static_assert(kMatrices == 1 || kMatrices == 2 || kMatrices == 4, "ldmatrix loads 1, 2 or 4");
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::ldmatrix<kMatrices, true>(r, shared_row, where);
#elif defined(TS_TC_PTX)
  const auto row = static_cast<unsigned>(__cvta_generic_to_shared(shared_row));
  if constexpr (kMatrices == 1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0])
                 : "r"(row)
                 : "memory");
  } else if constexpr (kMatrices == 2) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(row)
                 : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row)
                 : "memory");
  }
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// cp.async.ca: kBytes (4, 8 or 16) from global to shared memory, both aligned to kBytes. The
// _zfill forms copy src_bytes (0..kBytes) and fill the rest with zeros (src is not read when
// src_bytes is 0). Nothing lands before a cp_async_wait_* that covers the copy's group.
template <int kBytes>
__device__ __forceinline__ void cp_async_ca_zfill(void* shared_dst, const void* global_src,
                                                  unsigned src_bytes TS_TC_CALLER_PLACE) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::async_copy(shared_dst, global_src, kBytes, src_bytes, where);
#elif defined(TS_TC_PTX)
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
               "l"(__cvta_generic_to_global(global_src)), "n"(kBytes), "r"(src_bytes)
               : "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

template <int kBytes>
__device__ __forceinline__ void cp_async_ca(void* shared_dst,
                                            const void* global_src TS_TC_CALLER_PLACE) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::async_copy(shared_dst, global_src, kBytes, kBytes, where);
#elif defined(TS_TC_PTX)
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
               "l"(__cvta_generic_to_global(global_src)), "n"(kBytes)
               : "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// cp.async.cg (bypasses L1): 16 bytes only.
__device__ __forceinline__ void cp_async_cg_zfill(void* shared_dst, const void* global_src,
                                                  unsigned src_bytes TS_TC_CALLER_PLACE) {
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::async_copy(shared_dst, global_src, 16, src_bytes, where);
#elif defined(TS_TC_PTX)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
               "l"(__cvta_generic_to_global(global_src)), "r"(src_bytes)
               : "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

__device__ __forceinline__ void cp_async_cg(void* shared_dst,
                                            const void* global_src TS_TC_CALLER_PLACE) {
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::async_copy(shared_dst, global_src, 16, 16, where);
#elif defined(TS_TC_PTX)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(shared_dst))),
               "l"(__cvta_generic_to_global(global_src))
               : "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// Closes the group of the calling thread's copies issued since its last commit (possibly
// empty).
__device__ __forceinline__ void cp_async_commit_group(
#if defined(TILESCOPE_SIMT_CPU)
    TS_SIMT_CALLER_PLACE
#endif
) {
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::async_copy_commit(where);
#elif defined(TS_TC_PTX)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// Waits until at most kPending of the calling thread's most recent committed groups are still
// in flight (copies issued after the last commit are not waited for). Other threads see the
// data only after a barrier that follows their issuers' waits.
template <int kPending>
__device__ __forceinline__ void cp_async_wait_group(
#if defined(TILESCOPE_SIMT_CPU)
    TS_SIMT_CALLER_PLACE
#endif
) {
  static_assert(kPending >= 0, "wait_group takes a count of groups left in flight");
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::async_copy_wait(kPending, where);
#elif defined(TS_TC_PTX)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// Every copy the calling thread issued, committed or not (cp.async.wait_all).
__device__ __forceinline__ void cp_async_wait_all(
#if defined(TILESCOPE_SIMT_CPU)
    TS_SIMT_CALLER_PLACE
#endif
) {
#if defined(TILESCOPE_SIMT_CPU)
  ::simt::detail::async_copy_commit(where);
  ::simt::detail::async_copy_wait(0, where);
#elif defined(TS_TC_PTX)
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

}  // namespace ts::tc
