// What cuda_fp16.h and cuda_bf16.h declare only for device code (inside `#if __CUDACC__`),
// for the host build of a kernel: fused multiply-add, the h*/h2* math functions, and the
// rounding conversions to integers. The arithmetic operators and plain conversions already
// compile on the host from CUDA's headers.
//
// Each is computed in float (double for fma, so the product is exact) and rounded once to
// the 16-bit type, which is what the GPU's instructions return for all but the approximate
// functions (htanh_approx, the transcendental functions differ in the last bit at most).
#pragma once

#include <cmath>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "instrumentation/simt/kernel_api/math_intrinsics.h"

namespace simt::detail {

// Per-type conversions, so one set of templates serves __half and __nv_bfloat16.
struct HalfTraits {
  using Scalar = __half;
  using Pair = __half2;
  static float to_float(Scalar h) { return __half2float(h); }
  static Scalar from_float(float f) { return __float2half_rn(f); }
  static Scalar from_double(double d) { return __double2half(d); }
  static Scalar low(Pair p) { return __low2half(p); }
  static Scalar high(Pair p) { return __high2half(p); }
  static Pair pair(Scalar lo, Scalar hi) { return __halves2half2(lo, hi); }
};
struct BFloat16Traits {
  using Scalar = __nv_bfloat16;
  using Pair = __nv_bfloat162;
  static float to_float(Scalar h) { return __bfloat162float(h); }
  static Scalar from_float(float f) { return __float2bfloat16_rn(f); }
  static Scalar from_double(double d) { return __double2bfloat16(d); }
  static Scalar low(Pair p) { return __low2bfloat16(p); }
  static Scalar high(Pair p) { return __high2bfloat16(p); }
  static Pair pair(Scalar lo, Scalar hi) { return __halves2bfloat162(lo, hi); }
};

template <typename Traits, typename Fn>
inline typename Traits::Scalar unary(typename Traits::Scalar x, Fn fn) {
  return Traits::from_float(fn(Traits::to_float(x)));
}
template <typename Traits, typename Fn>
inline typename Traits::Pair unary2(typename Traits::Pair x, Fn fn) {
  return Traits::pair(unary<Traits>(Traits::low(x), fn), unary<Traits>(Traits::high(x), fn));
}
template <typename Traits>
inline typename Traits::Scalar fma(typename Traits::Scalar a, typename Traits::Scalar b,
                                   typename Traits::Scalar c) {
  const double r =
      static_cast<double>(Traits::to_float(a)) * Traits::to_float(b) + Traits::to_float(c);
  return Traits::from_double(r);
}
inline float saturate01(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
inline float relu(float x) { return std::isnan(x) ? x : (x > 0.0f ? x : 0.0f); }

}  // namespace simt::detail

// One definition of every function for __half/__half2 and for __nv_bfloat16/__nv_bfloat162.
#define TS_SIMT_HALF_MATH(Traits, Scalar, Pair)                                                    \
  inline Scalar __hfma(Scalar a, Scalar b, Scalar c) {                                             \
    return ::simt::detail::fma<Traits>(a, b, c);                                                   \
  }                                                                                                \
  inline Scalar __hfma_sat(Scalar a, Scalar b, Scalar c) {                                         \
    return ::simt::detail::unary<Traits>(::simt::detail::fma<Traits>(a, b, c),                     \
                                         ::simt::detail::saturate01);                              \
  }                                                                                                \
  inline Scalar __hfma_relu(Scalar a, Scalar b, Scalar c) {                                        \
    return ::simt::detail::unary<Traits>(::simt::detail::fma<Traits>(a, b, c),                     \
                                         ::simt::detail::relu);                                    \
  }                                                                                                \
  inline Pair __hfma2(Pair a, Pair b, Pair c) {                                                    \
    return Traits::pair(__hfma(Traits::low(a), Traits::low(b), Traits::low(c)),                    \
                        __hfma(Traits::high(a), Traits::high(b), Traits::high(c)));                \
  }                                                                                                \
  inline Pair __hfma2_sat(Pair a, Pair b, Pair c) {                                                \
    return Traits::pair(__hfma_sat(Traits::low(a), Traits::low(b), Traits::low(c)),                \
                        __hfma_sat(Traits::high(a), Traits::high(b), Traits::high(c)));            \
  }                                                                                                \
  inline Pair __hfma2_relu(Pair a, Pair b, Pair c) {                                               \
    return Traits::pair(__hfma_relu(Traits::low(a), Traits::low(b), Traits::low(c)),               \
                        __hfma_relu(Traits::high(a), Traits::high(b), Traits::high(c)));           \
  }                                                                                                \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hexp, h2exp, [](float x) { return std::exp(x); })       \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hexp2, h2exp2, [](float x) { return std::exp2(x); })    \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hexp10, h2exp10,                                        \
                     [](float x) { return std::pow(10.0f, x); })                                   \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hlog, h2log, [](float x) { return std::log(x); })       \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hlog2, h2log2, [](float x) { return std::log2(x); })    \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hlog10, h2log10, [](float x) { return std::log10(x); }) \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hsqrt, h2sqrt, [](float x) { return std::sqrt(x); })    \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hrsqrt, h2rsqrt,                                        \
                     [](float x) { return 1.0f / std::sqrt(x); })                                  \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hrcp, h2rcp, [](float x) { return 1.0f / x; })          \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hsin, h2sin, [](float x) { return std::sin(x); })       \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hcos, h2cos, [](float x) { return std::cos(x); })       \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, htanh, h2tanh, [](float x) { return std::tanh(x); })    \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, htanh_approx, h2tanh_approx,                            \
                     [](float x) { return std::tanh(x); })                                         \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hceil, h2ceil, [](float x) { return std::ceil(x); })    \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hfloor, h2floor, [](float x) { return std::floor(x); }) \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, hrint, h2rint,                                          \
                     [](float x) { return std::nearbyint(x); })                                    \
  TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, htrunc, h2trunc, [](float x) { return std::trunc(x); })

#define TS_SIMT_HALF_UNARY(Traits, Scalar, Pair, name, name2, fn)               \
  inline Scalar name(Scalar x) { return ::simt::detail::unary<Traits>(x, fn); } \
  inline Pair name2(Pair x) { return ::simt::detail::unary2<Traits>(x, fn); }

TS_SIMT_HALF_MATH(::simt::detail::HalfTraits, __half, __half2)
TS_SIMT_HALF_MATH(::simt::detail::BFloat16Traits, __nv_bfloat16, __nv_bfloat162)

#undef TS_SIMT_HALF_UNARY
#undef TS_SIMT_HALF_MATH

// Rounding conversions to integers (the _rz ones compile on the host from CUDA's headers).
#define TS_SIMT_HALF_TO_INT(Scalar, to_float, prefix)                                 \
  inline int prefix##2int_rn(Scalar h) { return __float2int_rn(to_float(h)); }        \
  inline int prefix##2int_rd(Scalar h) { return __float2int_rd(to_float(h)); }        \
  inline int prefix##2int_ru(Scalar h) { return __float2int_ru(to_float(h)); }        \
  inline unsigned prefix##2uint_rn(Scalar h) { return __float2uint_rn(to_float(h)); } \
  inline unsigned prefix##2uint_rd(Scalar h) {                                        \
    return ::simt::detail::saturate_to_integer<unsigned>(std::floor(to_float(h)));    \
  }                                                                                   \
  inline unsigned prefix##2uint_ru(Scalar h) {                                        \
    return ::simt::detail::saturate_to_integer<unsigned>(std::ceil(to_float(h)));     \
  }                                                                                   \
  inline long long prefix##2ll_rn(Scalar h) { return __float2ll_rn(to_float(h)); }    \
  inline long long prefix##2ll_rd(Scalar h) {                                         \
    return ::simt::detail::saturate_to_integer<long long>(std::floor(to_float(h)));   \
  }                                                                                   \
  inline long long prefix##2ll_ru(Scalar h) {                                         \
    return ::simt::detail::saturate_to_integer<long long>(std::ceil(to_float(h)));    \
  }                                                                                   \
  TS_SIMT_HALF_TO(Scalar, to_float, prefix, short, short)                             \
  TS_SIMT_HALF_TO(Scalar, to_float, prefix, ushort, unsigned short)                   \
  TS_SIMT_HALF_TO(Scalar, to_float, prefix, ull, unsigned long long)

// prefix##2name_rn/_rd/_ru for one integer type, saturating (NaN -> 0) as cvt does.
#define TS_SIMT_HALF_TO(Scalar, to_float, prefix, name, Int)                      \
  inline Int prefix##2##name##_rn(Scalar h) {                                     \
    return ::simt::detail::saturate_to_integer<Int>(std::nearbyint(to_float(h))); \
  }                                                                               \
  inline Int prefix##2##name##_rd(Scalar h) {                                     \
    return ::simt::detail::saturate_to_integer<Int>(std::floor(to_float(h)));     \
  }                                                                               \
  inline Int prefix##2##name##_ru(Scalar h) {                                     \
    return ::simt::detail::saturate_to_integer<Int>(std::ceil(to_float(h)));      \
  }

TS_SIMT_HALF_TO_INT(__half, __half2float, __half)
TS_SIMT_HALF_TO_INT(__nv_bfloat16, __bfloat162float, __bfloat16)
#undef TS_SIMT_HALF_TO_INT
#undef TS_SIMT_HALF_TO

// Complex multiply-add on (real, imaginary) pairs: a * b + c.
inline __half2 __hcmadd(__half2 a, __half2 b, __half2 c) {
  const float ar = __low2float(a), ai = __high2float(a), br = __low2float(b), bi = __high2float(b);
  return __floats2half2_rn(ar * br - ai * bi + __low2float(c), ar * bi + ai * br + __high2float(c));
}
inline __nv_bfloat162 __hcmadd(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
  const float ar = __low2float(a), ai = __high2float(a), br = __low2float(b), bi = __high2float(b);
  return __floats2bfloat162_rn(ar * br - ai * bi + __low2float(c),
                               ar * bi + ai * br + __high2float(c));
}
