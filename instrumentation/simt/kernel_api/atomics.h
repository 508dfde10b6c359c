// CUDA's atomic functions for the host build of a kernel: std::atomic_ref on the target, so
// they are atomic across SIMT worker threads (blocks run concurrently on several workers).
//
// Read-modify-writes use acq_rel ordering although CUDA's are relaxed: on x86 the instruction
// is the same, and it keeps the compiler from moving a kernel's plain loads across the atomic
// (the "last block reduces the partials" idiom reads partials right after an atomicInc).
// The overload set mirrors CUDA's, so `atomicAdd(&unsigned_counter, 1)` picks the unsigned one.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace simt::detail {

inline constexpr auto kAtomicOrder = std::memory_order_acq_rel;

template <typename T>
inline T atomic_add(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value, kAtomicOrder);
}
template <typename T>
inline T atomic_sub(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_sub(value, kAtomicOrder);
}
template <typename T>
inline T atomic_exchange(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value, kAtomicOrder);
}
template <typename T>
inline T atomic_cas(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value, kAtomicOrder,
                                                       std::memory_order_acquire);
  return compare;  // holds the old value whether or not the exchange happened
}
// Applies `update(old)` atomically; returns the old value.
template <typename T, typename Update>
inline T atomic_update(T* address, Update update) {
  std::atomic_ref<T> target(*address);
  T old = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(old, update(old), kAtomicOrder, std::memory_order_relaxed)) {
  }
  return old;
}
template <typename T>
inline T atomic_max(T* address, T value) {
  return atomic_update(address, [value](T old) { return old < value ? value : old; });
}
template <typename T>
inline T atomic_min(T* address, T value) {
  return atomic_update(address, [value](T old) { return value < old ? value : old; });
}
template <typename T>
inline T atomic_and(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_and(value, kAtomicOrder);
}
template <typename T>
inline T atomic_or(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_or(value, kAtomicOrder);
}
template <typename T>
inline T atomic_xor(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_xor(value, kAtomicOrder);
}

// 16-bit floating types: a compare-and-swap loop on their bits, converting through float.
template <typename Half, typename ToFloat, typename FromFloat>
inline Half atomic_add_16bit(Half* address, Half value, ToFloat to_float, FromFloat from_float) {
  static_assert(sizeof(Half) == sizeof(uint16_t));
  std::atomic_ref<uint16_t> target(*reinterpret_cast<uint16_t*>(address));
  uint16_t old = target.load(std::memory_order_relaxed);
  for (;;) {
    const Half sum = from_float(to_float(std::bit_cast<Half>(old)) + to_float(value));
    if (target.compare_exchange_weak(old, std::bit_cast<uint16_t>(sum), kAtomicOrder,
                                     std::memory_order_relaxed)) {
      return std::bit_cast<Half>(old);
    }
  }
}

}  // namespace simt::detail

// atomicAdd
inline int atomicAdd(int* a, int v) { return ::simt::detail::atomic_add(a, v); }
inline unsigned atomicAdd(unsigned* a, unsigned v) { return ::simt::detail::atomic_add(a, v); }
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  return ::simt::detail::atomic_add(a, v);
}
inline float atomicAdd(float* a, float v) { return ::simt::detail::atomic_add(a, v); }
inline double atomicAdd(double* a, double v) { return ::simt::detail::atomic_add(a, v); }
inline __half atomicAdd(__half* a, __half v) {
  return ::simt::detail::atomic_add_16bit(
      a, v, [](__half h) { return __half2float(h); }, [](float f) { return __float2half_rn(f); });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* a, __nv_bfloat16 v) {
  return ::simt::detail::atomic_add_16bit(
      a, v, [](__nv_bfloat16 h) { return __bfloat162float(h); },
      [](float f) { return __float2bfloat16_rn(f); });
}

// atomicSub
inline int atomicSub(int* a, int v) { return ::simt::detail::atomic_sub(a, v); }
inline unsigned atomicSub(unsigned* a, unsigned v) { return ::simt::detail::atomic_sub(a, v); }

// atomicExch
inline int atomicExch(int* a, int v) { return ::simt::detail::atomic_exchange(a, v); }
inline unsigned atomicExch(unsigned* a, unsigned v) {
  return ::simt::detail::atomic_exchange(a, v);
}
inline unsigned long long atomicExch(unsigned long long* a, unsigned long long v) {
  return ::simt::detail::atomic_exchange(a, v);
}
inline float atomicExch(float* a, float v) { return ::simt::detail::atomic_exchange(a, v); }

// atomicMin / atomicMax
inline int atomicMin(int* a, int v) { return ::simt::detail::atomic_min(a, v); }
inline unsigned atomicMin(unsigned* a, unsigned v) { return ::simt::detail::atomic_min(a, v); }
inline long long atomicMin(long long* a, long long v) { return ::simt::detail::atomic_min(a, v); }
inline unsigned long long atomicMin(unsigned long long* a, unsigned long long v) {
  return ::simt::detail::atomic_min(a, v);
}
inline int atomicMax(int* a, int v) { return ::simt::detail::atomic_max(a, v); }
inline unsigned atomicMax(unsigned* a, unsigned v) { return ::simt::detail::atomic_max(a, v); }
inline long long atomicMax(long long* a, long long v) { return ::simt::detail::atomic_max(a, v); }
inline unsigned long long atomicMax(unsigned long long* a, unsigned long long v) {
  return ::simt::detail::atomic_max(a, v);
}

// atomicInc / atomicDec (wrap at `limit`, as CUDA defines them)
inline unsigned atomicInc(unsigned* a, unsigned limit) {
  return ::simt::detail::atomic_update(
      a, [limit](unsigned old) { return old >= limit ? 0u : old + 1; });
}
inline unsigned atomicDec(unsigned* a, unsigned limit) {
  return ::simt::detail::atomic_update(
      a, [limit](unsigned old) { return (old == 0 || old > limit) ? limit : old - 1; });
}

// atomicCAS
inline int atomicCAS(int* a, int compare, int v) {
  return ::simt::detail::atomic_cas(a, compare, v);
}
inline unsigned atomicCAS(unsigned* a, unsigned compare, unsigned v) {
  return ::simt::detail::atomic_cas(a, compare, v);
}
inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long compare,
                                    unsigned long long v) {
  return ::simt::detail::atomic_cas(a, compare, v);
}
inline unsigned short atomicCAS(unsigned short* a, unsigned short compare, unsigned short v) {
  return ::simt::detail::atomic_cas(a, compare, v);
}

// atomicAnd / atomicOr / atomicXor
inline int atomicAnd(int* a, int v) { return ::simt::detail::atomic_and(a, v); }
inline unsigned atomicAnd(unsigned* a, unsigned v) { return ::simt::detail::atomic_and(a, v); }
inline unsigned long long atomicAnd(unsigned long long* a, unsigned long long v) {
  return ::simt::detail::atomic_and(a, v);
}
inline int atomicOr(int* a, int v) { return ::simt::detail::atomic_or(a, v); }
inline unsigned atomicOr(unsigned* a, unsigned v) { return ::simt::detail::atomic_or(a, v); }
inline unsigned long long atomicOr(unsigned long long* a, unsigned long long v) {
  return ::simt::detail::atomic_or(a, v);
}
inline int atomicXor(int* a, int v) { return ::simt::detail::atomic_xor(a, v); }
inline unsigned atomicXor(unsigned* a, unsigned v) { return ::simt::detail::atomic_xor(a, v); }
inline unsigned long long atomicXor(unsigned long long* a, unsigned long long v) {
  return ::simt::detail::atomic_xor(a, v);
}

// Scoped variants (_block, _system): every scope is the same memory on the CPU.
#define TS_SIMT_SCOPED_ATOMIC(name)                                  \
  template <typename... Args>                                        \
  inline auto name##_block(Args... args)->decltype(name(args...)) {  \
    return name(args...);                                            \
  }                                                                  \
  template <typename... Args>                                        \
  inline auto name##_system(Args... args)->decltype(name(args...)) { \
    return name(args...);                                            \
  }
TS_SIMT_SCOPED_ATOMIC(atomicAdd)
TS_SIMT_SCOPED_ATOMIC(atomicSub)
TS_SIMT_SCOPED_ATOMIC(atomicExch)
TS_SIMT_SCOPED_ATOMIC(atomicMin)
TS_SIMT_SCOPED_ATOMIC(atomicMax)
TS_SIMT_SCOPED_ATOMIC(atomicInc)
TS_SIMT_SCOPED_ATOMIC(atomicDec)
TS_SIMT_SCOPED_ATOMIC(atomicCAS)
TS_SIMT_SCOPED_ATOMIC(atomicAnd)
TS_SIMT_SCOPED_ATOMIC(atomicOr)
TS_SIMT_SCOPED_ATOMIC(atomicXor)
#undef TS_SIMT_SCOPED_ATOMIC
