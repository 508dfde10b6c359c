// Math and bit intrinsics on random inputs against float64 / integer references written out
// here, on either backend. Tolerances are the GPU's documented error bounds (CUDA Math API,
// "intrinsic functions"), so the CPU runtime is held to what the hardware guarantees.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>

#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

constexpr unsigned kThreads = 128;
unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

TEST(Intrinsics, FastFloatMathWithinTheGpuErrorBounds) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const int n = 4096;
  const std::vector<float> x = random.floats(n, -3.0f, 3.0f);
  const std::vector<float> y = random.floats(n, 0.5f, 2.0f);
  DeviceArray<float> d_x(x), d_y(y);
  DeviceArray<float> d_out(poisoned<float>(8 * n));
  const RunStatus status = run_float_intrinsics({dim3(blocks_for(n)), dim3(kThreads)}, d_x.get(),
                                                d_y.get(), d_out.get(), n);
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const std::vector<float> out = d_out.to_host();

  for (int i = 0; i < n; ++i) {
    const double a = x[i], b = y[i];
    const float* o = &out[8 * i];
    SCOPED_TRACE("x = " + std::to_string(a) + ", y = " + std::to_string(b));
    EXPECT_NEAR(o[0], std::exp(a), 2e-6 * std::exp(a)) << "__expf";
    EXPECT_NEAR(o[1], std::log(b), 1e-6) << "__logf";
    EXPECT_NEAR(o[2], a / b, 1e-6 * std::fabs(a / b) + 1e-30) << "__fdividef";
    EXPECT_NEAR(o[3], 1.0 / std::sqrt(b), 1e-6) << "rsqrtf";
    EXPECT_EQ(o[4], a >= 1.0 ? 1.0f : (a <= 0.0 ? 0.0f : static_cast<float>(a))) << "__saturatef";
    EXPECT_EQ(o[5], std::fma(x[i], y[i], x[i])) << "__fmaf_rn";
    EXPECT_NEAR(o[6], std::pow(b, a), 4e-6 * std::pow(b, a)) << "__powf";
    EXPECT_NEAR(o[7], std::sin(a), 1e-6) << "__sinf";
  }
}

int expected_to_int(double rounded) {
  if (std::isnan(rounded)) return 0;
  if (rounded >= 2147483648.0) return INT_MAX;
  if (rounded < -2147483648.0) return INT_MIN;
  return static_cast<int>(rounded);
}
unsigned expected_to_unsigned(double rounded) {
  if (std::isnan(rounded) || rounded <= 0.0) return 0;
  if (rounded >= 4294967296.0) return UINT_MAX;
  return static_cast<unsigned>(rounded);
}

TEST(Intrinsics, FloatToIntRoundsSaturatesAndMapsNanToZero) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {std::nanf(""), inf,  -inf,  3e9f,  -3e9f, 5e9f,
                          2.5f,          3.5f, -2.5f, -0.4f, 0.5f};
  for (float v : random.floats(4000, -3e9f, 3e9f)) x.push_back(v);
  for (float v : random.floats(4000, -10.0f, 10.0f)) x.push_back(v);
  const int n = static_cast<int>(x.size());
  DeviceArray<float> d_x(x);
  DeviceArray<int> d_out(poisoned<int>(5 * n));
  const RunStatus status =
      run_float_to_int({dim3(blocks_for(n)), dim3(kThreads)}, d_x.get(), d_out.get(), n);
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const std::vector<int> out = d_out.to_host();

  for (int i = 0; i < n; ++i) {
    const double v = x[i];
    const double half_even = std::nearbyint(v);  // the default rounding mode: to nearest even
    SCOPED_TRACE("x = " + std::to_string(v));
    EXPECT_EQ(out[5 * i + 0], expected_to_int(half_even)) << "__float2int_rn";
    EXPECT_EQ(out[5 * i + 1], expected_to_int(std::trunc(v))) << "__float2int_rz";
    EXPECT_EQ(out[5 * i + 2], expected_to_int(std::floor(v))) << "__float2int_rd";
    EXPECT_EQ(out[5 * i + 3], expected_to_int(std::ceil(v))) << "__float2int_ru";
    EXPECT_EQ(static_cast<unsigned>(out[5 * i + 4]), expected_to_unsigned(half_even))
        << "__float2uint_rn";
  }
}

TEST(Intrinsics, BitOperationsMatchTheirDefinitions) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  std::vector<unsigned> a = random.uints(4096);
  std::vector<unsigned> b = random.uints(4096);
  a[0] = 0;  // __clz(0) = 32, __ffs(0) = 0
  a[1] = 1u << 31;
  for (size_t i = 2; i < 64; ++i) a[i] >>= i % 32;  // small values: many leading zeros
  const int n = static_cast<int>(a.size());
  DeviceArray<unsigned> d_a(a), d_b(b);
  DeviceArray<unsigned> d_out(poisoned<unsigned>(6 * n));
  const RunStatus status = run_bit_intrinsics({dim3(blocks_for(n)), dim3(kThreads)}, d_a.get(),
                                              d_b.get(), d_out.get(), n);
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const std::vector<unsigned> out = d_out.to_host();

  for (int i = 0; i < n; ++i) {
    unsigned pop = 0, clz = 32, ffs = 0, brev = 0;
    for (unsigned bit = 0; bit < 32; ++bit) {
      const unsigned set = (a[i] >> bit) & 1u;
      pop += set;
      if (set != 0) clz = 31 - bit;  // the highest set bit wins
      if (set != 0 && ffs == 0) ffs = bit + 1;
      brev |= set << (31 - bit);
    }
    unsigned perm = 0;
    const unsigned long long bytes = (static_cast<unsigned long long>(b[i]) << 32) | a[i];
    for (unsigned k = 0; k < 4; ++k) {
      const unsigned select = (0x7351u >> (4 * k)) & 7u;
      perm |= static_cast<unsigned>((bytes >> (8 * select)) & 0xffu) << (8 * k);
    }
    const auto mulhi = static_cast<unsigned>((static_cast<unsigned long long>(a[i]) * b[i]) >> 32);
    SCOPED_TRACE("a = " + std::to_string(a[i]) + ", b = " + std::to_string(b[i]));
    EXPECT_EQ(out[6 * i + 0], pop) << "__popc";
    EXPECT_EQ(out[6 * i + 1], clz) << "__clz";
    EXPECT_EQ(out[6 * i + 2], ffs) << "__ffs";
    EXPECT_EQ(out[6 * i + 3], brev) << "__brev";
    EXPECT_EQ(out[6 * i + 4], perm) << "__byte_perm";
    EXPECT_EQ(out[6 * i + 5], mulhi) << "__umulhi";
  }
}

TEST(Intrinsics, HalfAndBfloat16FunctionsWithinTwoUnitsInTheLastPlace) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const int n = 4096;
  const std::vector<float> x = random.floats(n, -3.0f, 3.0f);
  const std::vector<float> y = random.floats(n, 0.5f, 2.0f);
  DeviceArray<float> d_x(x), d_y(y);
  DeviceArray<float> d_out(poisoned<float>(6 * n));
  const RunStatus status = run_half_intrinsics({dim3(blocks_for(n)), dim3(kThreads)}, d_x.get(),
                                               d_y.get(), d_out.get(), n);
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const std::vector<float> out = d_out.to_host();

  constexpr double kHalfUlp = 1.0 / 1024;     // 2^-10: one unit in the last place, relative
  constexpr double kBfloat16Ulp = 1.0 / 128;  // 2^-7
  for (int i = 0; i < n; ++i) {
    const double hx = __half2float(__float2half_rn(x[i]));
    const double hy = __half2float(__float2half_rn(y[i]));
    const double bx = __bfloat162float(__float2bfloat16_rn(x[i]));
    const double by = __bfloat162float(__float2bfloat16_rn(y[i]));
    const double want[6] = {std::exp(hx), hx * hy + hx, std::sqrt(hy),
                            std::exp(bx), bx * by + bx, std::sqrt(by)};
    SCOPED_TRACE("x = " + std::to_string(x[i]) + ", y = " + std::to_string(y[i]));
    for (int k = 0; k < 6; ++k) {
      const double ulp = k < 3 ? kHalfUlp : kBfloat16Ulp;
      EXPECT_NEAR(out[6 * i + k], want[k], 2 * ulp * std::fabs(want[k]) + 1e-4)
          << (k % 3 == 0   ? "hexp"
              : k % 3 == 1 ? "__hfma"
                           : "hsqrt")
          << (k < 3 ? " (half)" : " (bfloat16)");
    }
  }
}

}  // namespace
}  // namespace ts::test
