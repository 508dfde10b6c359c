// Vector loads of 8 consecutive input elements (16 bytes of fp16/bf16, 32 of fp32) as raw
// bits, their conversion to float, and float -> dtype stores. Raw bits first, conversion
// later: a kernel can issue a whole tile's loads before it needs the values (bytes in flight),
// which is what makes the memory-bound decode kernel fast.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "kernels/device/unroll.cuh"

#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

namespace ts::device {

template <typename T>
struct Raw8 {
  static constexpr int kWords = static_cast<int>(sizeof(T)) / 2;  // uint4s per 8 elements
  uint4 w[kWords];
};

// p must be 16-byte aligned (rows of head_dim >= 32 elements from an aligned base are).
template <typename T>
__device__ __forceinline__ Raw8<T> load_raw8(const T* p) {
  Raw8<T> r;
#if defined(__CUDA_ARCH__)
  TS_UNROLL
  for (int i = 0; i < Raw8<T>::kWords; ++i) r.w[i] = reinterpret_cast<const uint4*>(p)[i];
#else
  std::memcpy(&r.w[0], p, sizeof(r.w));  // the host build reads the same bytes without aliasing UB
#endif
  return r;
}

// The 8 elements' bits to p (16-byte aligned), as load_raw8 read them.
template <typename T>
__device__ __forceinline__ void store_raw8(T* p, const Raw8<T>& r) {
#if defined(__CUDA_ARCH__)
  TS_UNROLL
  for (int i = 0; i < Raw8<T>::kWords; ++i) reinterpret_cast<uint4*>(p)[i] = r.w[i];
#else
  std::memcpy(static_cast<void*>(p), &r.w[0], sizeof(r.w));
#endif
}

// Two 16-bit elements' bits (a .b32 register, low element first) to p (4-byte aligned).
template <typename T>
__device__ __forceinline__ void store_word(T* p, unsigned w) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<unsigned*>(p) = w;
#else
  std::memcpy(static_cast<void*>(p), &w, sizeof w);
#endif
}

template <typename T>
__device__ __forceinline__ Raw8<T> zero_raw8() {
  Raw8<T> r;
  TS_UNROLL
  for (int i = 0; i < Raw8<T>::kWords; ++i) r.w[i] = make_uint4(0u, 0u, 0u, 0u);
  return r;
}

__device__ __forceinline__ float bits_to_float(unsigned bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

__device__ __forceinline__ void word_to_floats(float, unsigned w, float* out) {  // fp32
  out[0] = bits_to_float(w);
}
__device__ __forceinline__ void word_to_floats(__half, unsigned w, float* out) {
  out[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)));
  out[1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}
__device__ __forceinline__ void word_to_floats(__nv_bfloat16, unsigned w, float* out) {
  out[0] = bits_to_float(w << 16);  // bf16 -> fp32 is exact: the high half of the word
  out[1] = bits_to_float(w & 0xffff0000u);
}

// The 8 elements as float, in order.
template <typename T>
__device__ __forceinline__ void raw8_to_float(const Raw8<T>& r, float* out) {
  constexpr int kPerWord = 4 / static_cast<int>(sizeof(T));  // elements per 32-bit word
  TS_UNROLL
  for (int i = 0; i < Raw8<T>::kWords; ++i) {
    word_to_floats(T{}, r.w[i].x, out + (4 * i + 0) * kPerWord);
    word_to_floats(T{}, r.w[i].y, out + (4 * i + 1) * kPerWord);
    word_to_floats(T{}, r.w[i].z, out + (4 * i + 2) * kPerWord);
    word_to_floats(T{}, r.w[i].w, out + (4 * i + 3) * kPerWord);
  }
}

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// One element of a tile that store_raw8 wrote, as float.
template <typename T>
__device__ __forceinline__ float element_to_float(const T* p) {
#if defined(__CUDA_ARCH__)
  return to_float(*p);
#else
  T x;
  std::memcpy(static_cast<void*>(&x), p, sizeof x);  // written as raw bytes: read as bytes (host aliasing rules)
  return to_float(x);
#endif
}

// kN consecutive elements at p as float, read as 32-bit words (p aligned to the bytes read:
// 4, 8 or a multiple of 16) where they fill whole words, else element by element.
template <typename T, int kN>
__device__ __forceinline__ void load_floats(const T* p, float* out) {
  constexpr int kBytes = kN * static_cast<int>(sizeof(T));
  if constexpr (kBytes < 4) {
    TS_UNROLL
    for (int i = 0; i < kN; ++i) out[i] = element_to_float(p + i);
  } else {
    constexpr int kWords = kBytes / 4, kPerWord = 4 / static_cast<int>(sizeof(T));
    static_assert(kBytes % 4 == 0 && (kWords <= 2 || kWords % 4 == 0), "whole 4-, 8- or 16-byte reads");
    unsigned w[kWords];
#if defined(__CUDA_ARCH__)
    if constexpr (kWords == 1) {
      w[0] = *reinterpret_cast<const unsigned*>(p);
    } else if constexpr (kWords == 2) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      w[0] = v.x;
      w[1] = v.y;
    } else {
      TS_UNROLL
      for (int i = 0; i < kWords / 4; ++i) {
        const uint4 v = reinterpret_cast<const uint4*>(p)[i];
        w[4 * i] = v.x;
        w[4 * i + 1] = v.y;
        w[4 * i + 2] = v.z;
        w[4 * i + 3] = v.w;
      }
    }
#else
    std::memcpy(w, static_cast<const void*>(p), sizeof w);
#endif
    TS_UNROLL
    for (int i = 0; i < kWords; ++i) word_to_floats(T{}, w[i], out + i * kPerWord);
  }
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

}  // namespace ts::device
