// Atomics from many blocks into one place, on either backend (the CPU runtime runs blocks on
// several worker threads, so lost updates would show).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

TEST(Atomics, EveryOperationFromManyBlocks) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const int n = 20000;
  const unsigned threads = 128;
  const unsigned blocks = (n + threads - 1) / threads;
  const std::vector<int> ints = random.ints(n, -10000, 10000);
  const std::vector<float> floats = random.floats(n, 0.0f, 1.0f);

  AtomicTotals initial{};
  initial.max = INT_MIN;
  initial.min = INT_MAX;
  initial.unsigned_min = UINT_MAX;
  initial.bits_and = ~0u;
  initial.cas_max = INT_MIN;
  initial.exchanged = 1 << 30;  // not among the inputs
  DeviceArray<int> d_ints(ints);
  DeviceArray<float> d_floats(floats);
  DeviceArray<AtomicTotals> d_totals(std::vector<AtomicTotals>{initial});

  const RunStatus status =
      run_atomics({dim3(blocks), dim3(threads)}, d_ints.get(), d_floats.get(), n, d_totals.get());
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const AtomicTotals got = d_totals.to_host()[0];

  long long sum = 0;
  unsigned unsigned_sum = 0, umax = 0, umin = UINT_MAX, bits_and = ~0u, bits_or = 0, bits_xor = 0;
  unsigned long long wide_sum = 0;
  double float_sum = 0.0;
  for (int i = 0; i < n; ++i) {
    const auto u = static_cast<unsigned>(ints[i]);
    sum += ints[i];
    unsigned_sum += u;
    wide_sum += u;
    umax = std::max(umax, u);
    umin = std::min(umin, u);
    bits_and &= u;
    bits_or |= u;
    bits_xor ^= u;
    float_sum += floats[i];
  }
  EXPECT_EQ(got.sum, sum);
  EXPECT_EQ(got.difference, -sum);
  EXPECT_EQ(got.unsigned_sum, unsigned_sum);
  EXPECT_EQ(got.wide_sum, wide_sum);
  EXPECT_NEAR(got.float_sum, float_sum, 2e-3 * float_sum);  // order of float additions varies
  EXPECT_EQ(got.max, *std::max_element(ints.begin(), ints.end()));
  EXPECT_EQ(got.min, *std::min_element(ints.begin(), ints.end()));
  EXPECT_EQ(got.unsigned_max, umax);
  EXPECT_EQ(got.unsigned_min, umin);
  EXPECT_EQ(got.bits_and, bits_and);
  EXPECT_EQ(got.bits_or, bits_or);
  EXPECT_EQ(got.bits_xor, bits_xor);
  EXPECT_EQ(got.wrapping_count, static_cast<unsigned>(n) % (kWrapLimit + 1));
  EXPECT_EQ(got.cas_max, *std::max_element(ints.begin(), ints.end()));
  EXPECT_NEAR(got.cas_double_sum, float_sum, 1e-9 * float_sum);
  EXPECT_NE(std::find(ints.begin(), ints.end(), got.exchanged), ints.end())
      << "atomicExch left " << got.exchanged << ", which no thread swapped in";
}

TEST(Atomics, HistogramCountsEveryValue) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const int n = 30000;
  const unsigned bin_count = 37;
  const std::vector<unsigned> values = random.uints(n);
  DeviceArray<unsigned> d_values(values);
  DeviceArray<unsigned> d_bins(std::vector<unsigned>(bin_count, 0));

  const RunStatus status =
      run_histogram({dim3((n + 255) / 256), dim3(256)}, d_values.get(), n, d_bins.get(), bin_count);
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;

  std::vector<unsigned> expected(bin_count, 0);
  for (unsigned v : values) ++expected[v % bin_count];
  EXPECT_EQ(d_bins.to_host(), expected);
}

TEST(Atomics, NoUpdateIsLostUnderContention) {
  const unsigned blocks = 64, threads = 64;
  const int iterations = 100;
  const unsigned total = blocks * threads * iterations;
  DeviceArray<unsigned> d_counters(std::vector<unsigned>{0, 0, 0, total});
  const RunStatus status =
      run_contended_counters({dim3(blocks), dim3(threads)}, d_counters.get(), iterations);
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  EXPECT_EQ(d_counters.to_host(), (std::vector<unsigned>{total, total, total, 0}))
      << "atomicAdd, atomicInc, atomicCAS loop, atomicSub";
}

}  // namespace
}  // namespace ts::test
