// The kernel-facing functions of the CPU build that need no launch, called directly: rounding
// conversions of __half/__nv_bfloat16 to the narrow and wide integer types (saturating, NaN
// to 0, as the GPU's cvt instructions), complex multiply-add, and clock64. CPU only.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>

#include "instrumentation/simt/cuda_compat.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

TEST(HostIntrinsics, HalfToIntegerConversionsRoundAndSaturate) {
  const __half big = __float2half(60000.0f);
  const __half negative = __float2half(-1.5f);
  const __half nan = __float2half(std::nanf(""));
  const __half two_and_half = __float2half(2.5f);
  EXPECT_EQ(__half2short_rn(big), std::numeric_limits<short>::max());
  EXPECT_EQ(__half2short_rd(negative), -2);
  EXPECT_EQ(__half2short_ru(negative), -1);
  EXPECT_EQ(__half2short_rn(two_and_half), 2);  // to nearest even
  EXPECT_EQ(__half2ushort_rd(negative), 0);
  EXPECT_EQ(__half2ushort_rn(big), 60000);
  EXPECT_EQ(__half2ull_ru(two_and_half), 3u);
  EXPECT_EQ(__half2ull_rn(nan), 0u);
  EXPECT_EQ(__half2int_rn(nan), 0);
  EXPECT_EQ(__half2ll_rd(negative), -2);

  const __nv_bfloat16 huge = __float2bfloat16(1e30f);
  EXPECT_EQ(__bfloat162short_rn(huge), std::numeric_limits<short>::max());
  EXPECT_EQ(__bfloat162ushort_ru(__float2bfloat16(-0.5f)), 0);
  EXPECT_EQ(__bfloat162ull_ru(__float2bfloat16(3.25f)), 4u);
  EXPECT_EQ(__bfloat162ull_rn(huge), std::numeric_limits<unsigned long long>::max());
  EXPECT_EQ(__bfloat162int_rd(__float2bfloat16(-3.25f)), -4);
}

TEST(HostIntrinsics, ComplexMultiplyAddOfHalfPairs) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const std::vector<float> v = random.floats(6 * 200, -2.0f, 2.0f);
  for (size_t i = 0; i < v.size(); i += 6) {
    const __half2 a = __floats2half2_rn(v[i], v[i + 1]);
    const __half2 b = __floats2half2_rn(v[i + 2], v[i + 3]);
    const __half2 c = __floats2half2_rn(v[i + 4], v[i + 5]);
    const std::complex<double> want = std::complex<double>(__low2float(a), __high2float(a)) *
                                          std::complex<double>(__low2float(b), __high2float(b)) +
                                      std::complex<double>(__low2float(c), __high2float(c));
    const __half2 got = __hcmadd(a, b, c);
    EXPECT_NEAR(__low2float(got), want.real(), 4e-3 * (1 + std::abs(want.real())));
    EXPECT_NEAR(__high2float(got), want.imag(), 4e-3 * (1 + std::abs(want.imag())));
  }
}

TEST(HostIntrinsics, Clock64IsMonotonic) {
  const long long first = clock64();
  long long last = first;
  for (int i = 0; i < 1000; ++i) {
    const long long now = clock64();
    EXPECT_GE(now, last);
    last = now;
  }
  EXPECT_GT(last, 0);
}

}  // namespace
}  // namespace ts::test
