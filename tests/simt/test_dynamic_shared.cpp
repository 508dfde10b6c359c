// Dynamic shared memory sized at launch, seen through two typed views, on either backend.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

TEST(DynamicShared, ReversesEachBlockThroughTwoViews) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned blocks = 3;
  for (unsigned threads : {32u, 100u, 256u}) {
    // The second size is past the 48 KiB a GPU grants without opting in.
    for (size_t bytes : {size_t{reverse_in_shared_bytes(threads)}, size_t{64 * 1024}}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", shared bytes " +
                   std::to_string(bytes));
      const std::vector<float> in = random.floats(threads * blocks, -100.0f, 100.0f);
      DeviceArray<float> d_in(in);
      DeviceArray<float> d_reversed(poisoned<float>(in.size()));
      DeviceArray<double> d_doubled(poisoned<double>(in.size()));
      DeviceArray<int> d_misaligned(poisoned<int>(blocks));

      const RunStatus status =
          run_reverse_in_shared({dim3(blocks), dim3(threads), bytes}, d_in.get(), d_reversed.get(),
                                d_doubled.get(), d_misaligned.get());
      ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;

      const std::vector<float> reversed = d_reversed.to_host();
      const std::vector<double> doubled = d_doubled.to_host();
      for (unsigned b = 0; b < blocks; ++b) {
        for (unsigned t = 0; t < threads; ++t) {
          const float source = in[b * threads + (threads - 1 - t)];
          EXPECT_EQ(reversed[b * threads + t], source) << "block " << b << " thread " << t;
          EXPECT_EQ(doubled[b * threads + t], 2.0 * source) << "block " << b << " thread " << t;
        }
      }
      EXPECT_EQ(d_misaligned.to_host(), std::vector<int>(blocks, 0));
    }
  }
}

}  // namespace
}  // namespace ts::test
