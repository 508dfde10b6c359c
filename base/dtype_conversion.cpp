#include "base/dtype_conversion.h"

#include <cstdint>
#include <cstring>

#include <cuda_fp16.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define TS_HAVE_F16C_PATH 1
#endif

namespace ts {
namespace {

// bf16 keeps the top 16 bits of a float: add half of the dropped part's range, plus one when
// the kept part is odd (ties to even), and cut; a value past bf16's largest carries into the
// infinity. A NaN is returned as it is (the addition could carry its payload away).
float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

float round_f16_portable(float x) { return __half2float(__float2half_rn(x)); }

#ifdef TS_HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) void round_f16_f16c(float* x, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) {
    const __m128i h = _mm_cvtps_ph(_mm_set_ss(x[i]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x[i] = _mm_cvtss_f32(_mm_cvtph_ps(h));
  }
}

__attribute__((target("avx,f16c"))) void store_f16_f16c(const float* x, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i)
    out[i] = static_cast<uint16_t>(
        _mm_cvtsi128_si32(_mm_cvtps_ph(_mm_set_ss(x[i]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
}

__attribute__((target("avx,f16c"))) void widen_f16_f16c(const uint16_t* h, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
  for (; i < n; ++i) out[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h[i])));
}

// F16C from CPUID (clang's __builtin_cpu_supports does not know "f16c"); AVX from the builtin,
// which also checks that the OS saves the AVX registers.
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  }();
  return has;
}
#endif

}  // namespace

void round_to_dtype(DType dtype, float* x, size_t n) {
  switch (dtype) {
    case DType::f32: return;
    case DType::bf16:
      for (size_t i = 0; i < n; ++i) x[i] = round_bf16(x[i]);
      return;
    case DType::f16:
#ifdef TS_HAVE_F16C_PATH
      if (cpu_has_f16c()) {
        round_f16_f16c(x, n);
        return;
      }
#endif
      for (size_t i = 0; i < n; ++i) x[i] = round_f16_portable(x[i]);
      return;
  }
}

void widen_f16(const uint16_t* half_bits, size_t n, float* out) {
#ifdef TS_HAVE_F16C_PATH
  if (cpu_has_f16c()) {
    widen_f16_f16c(half_bits, n, out);
    return;
  }
#endif
  for (size_t i = 0; i < n; ++i) {
    __half_raw raw;
    raw.x = half_bits[i];
    out[i] = __half2float(__half(raw));
  }
}

void store_as_dtype(DType dtype, const float* x, size_t n, void* out) {
  switch (dtype) {
    case DType::f32:
      std::memcpy(out, x, n * sizeof(float));
      return;
    case DType::bf16: {
      auto* o = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < n; ++i) {
        const float r = round_bf16(x[i]);
        uint32_t u;
        std::memcpy(&u, &r, sizeof u);
        o[i] = static_cast<uint16_t>(u >> 16);
      }
      return;
    }
    case DType::f16: {
      auto* o = static_cast<uint16_t*>(out);
#ifdef TS_HAVE_F16C_PATH
      if (cpu_has_f16c()) {
        store_f16_f16c(x, n, o);
        return;
      }
#endif
      for (size_t i = 0; i < n; ++i) {
        const __half_raw raw = __half(__float2half_rn(x[i]));
        o[i] = raw.x;
      }
      return;
    }
  }
}

float round_to_dtype(DType dtype, float x) {
  round_to_dtype(dtype, &x, 1);
  return x;
}

}  // namespace ts
