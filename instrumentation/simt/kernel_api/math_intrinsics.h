// The device math and bit intrinsics kernels call, for the host build of a kernel.
//
// The fast-math intrinsics (__expf, __logf, __powf...) are written the way the GPU computes
// them (through exp2/log2), so their error grows with |x| as it does on a GPU; they are not
// bit-identical to the GPU's approximations. Float-to-integer conversions saturate and map
// NaN to 0 as the GPU's cvt instructions do (a plain C++ cast would be undefined behaviour).
// min/max mirror the overload set CUDA declares in crt/math_functions.hpp.
#pragma once

#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>

namespace simt::detail {

// __extension__: 128-bit integers are a GNU extension (-Wpedantic would reject them).
__extension__ typedef __int128 int128;
__extension__ typedef unsigned __int128 uint128;

inline constexpr float kLog2E = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;
inline constexpr float kLog2Of10 = 3.3219280948873623f;
inline constexpr float kLog10Of2 = 0.3010299956639812f;

template <typename Int, typename Float>
inline Int saturate_to_integer(Float rounded) {
  if (std::isnan(rounded)) return 0;
  if (rounded <= static_cast<Float>(std::numeric_limits<Int>::min())) {
    return std::numeric_limits<Int>::min();
  }
  if (rounded >= static_cast<Float>(std::numeric_limits<Int>::max())) {
    return std::numeric_limits<Int>::max();
  }
  return static_cast<Int>(rounded);
}

}  // namespace simt::detail

// --- single-precision fast math -------------------------------------------------------------
inline float __expf(float x) { return std::exp2(x * ::simt::detail::kLog2E); }
inline float __exp10f(float x) { return std::exp2(x * ::simt::detail::kLog2Of10); }
inline float __logf(float x) { return std::log2(x) * ::simt::detail::kLn2; }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log2(x) * ::simt::detail::kLog10Of2; }
inline float __powf(float x, float y) { return std::exp2(y * std::log2(x)); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
inline float __tanhf(float x) { return std::tanh(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }  // NaN -> 0
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / std::cbrt(x); }

// --- single-precision, round-to-nearest ------------------------------------------------------
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.0f / std::sqrt(x); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline double __dsqrt_rn(double x) { return std::sqrt(x); }

// --- conversions and reinterpretation --------------------------------------------------------
inline int __float2int_rn(float x) {
  return ::simt::detail::saturate_to_integer<int>(std::nearbyint(x));
}
inline int __float2int_rz(float x) {
  return ::simt::detail::saturate_to_integer<int>(std::trunc(x));
}
inline int __float2int_rd(float x) {
  return ::simt::detail::saturate_to_integer<int>(std::floor(x));
}
inline int __float2int_ru(float x) {
  return ::simt::detail::saturate_to_integer<int>(std::ceil(x));
}
inline unsigned __float2uint_rn(float x) {
  return ::simt::detail::saturate_to_integer<unsigned>(std::nearbyint(x));
}
inline unsigned __float2uint_rz(float x) {
  return ::simt::detail::saturate_to_integer<unsigned>(std::trunc(x));
}
inline long long __float2ll_rn(float x) {
  return ::simt::detail::saturate_to_integer<long long>(std::nearbyint(x));
}
inline long long __float2ll_rz(float x) {
  return ::simt::detail::saturate_to_integer<long long>(std::trunc(x));
}
inline int __double2int_rn(double x) {
  return ::simt::detail::saturate_to_integer<int>(std::nearbyint(x));
}
inline int __double2int_rz(double x) {
  return ::simt::detail::saturate_to_integer<int>(std::trunc(x));
}
inline float __double2float_rn(double x) { return static_cast<float>(x); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
inline double __int2double_rn(int x) { return static_cast<double>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }

// --- integer intrinsics ----------------------------------------------------------------------
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return std::countl_zero(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline int __ffsll(long long x) {
  return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1;
}
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) |
         __brev(static_cast<unsigned>(x >> 32));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned selector) {
  const uint64_t bytes = (static_cast<uint64_t>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned pick = (selector >> (4 * i)) & 7u;
    r |= static_cast<unsigned>((bytes >> (8 * pick)) & 0xffu) << (8 * i);
  }
  return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  const uint64_t both = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<unsigned>((both << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  const uint64_t both = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<unsigned>(both >> (shift & 31u));
}
inline int __mul24(int x, int y) {
  const auto sext24 = [](int v) { return static_cast<int>(static_cast<unsigned>(v) << 8) >> 8; };
  return static_cast<int>(static_cast<unsigned>(sext24(x)) * static_cast<unsigned>(sext24(y)));
}
inline unsigned __umul24(unsigned x, unsigned y) { return (x & 0xffffffu) * (y & 0xffffffu); }
inline int __mulhi(int x, int y) {
  return static_cast<int>((static_cast<int64_t>(x) * static_cast<int64_t>(y)) >> 32);
}
inline unsigned __umulhi(unsigned x, unsigned y) {
  return static_cast<unsigned>((static_cast<uint64_t>(x) * static_cast<uint64_t>(y)) >> 32);
}
inline long long __mul64hi(long long x, long long y) {
  return static_cast<long long>(
      (static_cast<::simt::detail::int128>(x) * static_cast<::simt::detail::int128>(y)) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return static_cast<unsigned long long>(
      (static_cast<::simt::detail::uint128>(x) * static_cast<::simt::detail::uint128>(y)) >> 64);
}
inline unsigned __sad(int x, int y, unsigned z) {
  return z +
         static_cast<unsigned>(x > y ? static_cast<int64_t>(x) - y : static_cast<int64_t>(y) - x);
}
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return z + (x > y ? x - y : y - x); }

// --- loads and stores with cache hints (plain memory on the CPU) -------------------------------
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
template <typename T>
inline T __ldca(const T* p) {
  return *p;
}
template <typename T>
inline T __ldcg(const T* p) {
  return *p;
}
template <typename T>
inline T __ldcs(const T* p) {
  return *p;
}
template <typename T>
inline T __ldlu(const T* p) {
  return *p;
}
template <typename T>
inline T __ldcv(const T* p) {
  return *p;
}
template <typename T>
inline void __stwb(T* p, T v) {
  *p = v;
}
template <typename T>
inline void __stcg(T* p, T v) {
  *p = v;
}
template <typename T>
inline void __stcs(T* p, T v) {
  *p = v;
}
template <typename T>
inline void __stwt(T* p, T v) {
  *p = v;
}

// --- clocks ----------------------------------------------------------------------------------
inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// --- min / max: CUDA's overload set -----------------------------------------------------------
inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned min(int a, unsigned b) { return min(static_cast<unsigned>(a), b); }
inline unsigned min(unsigned a, int b) { return min(a, static_cast<unsigned>(b)); }
inline long min(long a, long b) { return a < b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long min(long a, unsigned long b) { return min(static_cast<unsigned long>(a), b); }
inline unsigned long min(unsigned long a, long b) { return min(a, static_cast<unsigned long>(b)); }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long min(long long a, unsigned long long b) {
  return min(static_cast<unsigned long long>(a), b);
}
inline unsigned long long min(unsigned long long a, long long b) {
  return min(a, static_cast<unsigned long long>(b));
}
inline float min(float a, float b) { return std::fmin(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double min(float a, double b) { return std::fmin(static_cast<double>(a), b); }
inline double min(double a, float b) { return std::fmin(a, static_cast<double>(b)); }

inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned max(int a, unsigned b) { return max(static_cast<unsigned>(a), b); }
inline unsigned max(unsigned a, int b) { return max(a, static_cast<unsigned>(b)); }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline unsigned long max(long a, unsigned long b) { return max(static_cast<unsigned long>(a), b); }
inline unsigned long max(unsigned long a, long b) { return max(a, static_cast<unsigned long>(b)); }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline unsigned long long max(long long a, unsigned long long b) {
  return max(static_cast<unsigned long long>(a), b);
}
inline unsigned long long max(unsigned long long a, long long b) {
  return max(a, static_cast<unsigned long long>(b));
}
inline float max(float a, float b) { return std::fmax(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline double max(float a, double b) { return std::fmax(static_cast<double>(a), b); }
inline double max(double a, float b) { return std::fmax(a, static_cast<double>(b)); }
