// What only the CPU runtime can promise about warps and shared memory: partial last warps
// behave as if their missing lanes had exited, exited lanes drop out of warp operations (which
// complete without them), a shuffle from a lane outside the mask or exited reads as poison
// (NaN) instead of an arbitrary value, and dynamic shared memory nobody wrote reads as NaN in
// every block. CPU only.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

TEST(CpuWarpDetails, PartialLastWarpWithAFullMask) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned threads = 48;  // the second warp has 16 lanes
  const std::vector<int> in = random.ints(threads, -1000, 1000);
  DeviceArray<int> d_in(in);
  for (unsigned width : {1u, 2u, 4u, 8u, 16u}) {
    DeviceArray<int> d_out(poisoned<int>(4 * threads));
    const RunStatus status = run_warp_reduce({dim3(1), dim3(threads), 0, 1}, d_in.get(),
                                             d_out.get(), static_cast<int>(width));
    ASSERT_TRUE(status.ok) << status.message;
    const std::vector<int> out = d_out.to_host();
    for (unsigned i = 0; i < threads; ++i) {
      int group_sum = 0;
      for (unsigned j = i / width * width; j < i / width * width + width; ++j) group_sum += in[j];
      EXPECT_EQ(out[4 * i + 0], group_sum) << "width " << width << " thread " << i;
    }
  }
}

TEST(CpuWarpDetails, ShuffleFromALaneOutsideTheMaskIsPoison) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const std::vector<float> in = random.floats(32, 1.0f, 2.0f);
  DeviceArray<float> d_in(in);
  DeviceArray<float> d_out(poisoned<float>(4 * 32));
  // Lanes 0..15 shuffle down by 16: every source (16..31) is outside the mask.
  const RunStatus status = run_shuffle_flavours<float>({dim3(1), dim3(32), 0, 1}, d_in.get(),
                                                       d_out.get(), 0x0000ffffu, 16, 32);
  ASSERT_TRUE(status.ok) << status.message;
  const std::vector<float> out = d_out.to_host();
  for (unsigned lane = 0; lane < 16; ++lane) {
    EXPECT_TRUE(std::isnan(out[4 * lane + 2])) << "shfl_down, lane " << lane;  // reads lane + 16
    EXPECT_TRUE(std::isnan(out[4 * lane + 0])) << "shfl idx 16, lane " << lane;
    EXPECT_TRUE(std::isnan(out[4 * lane + 3])) << "shfl_xor 16, lane " << lane;
    EXPECT_EQ(out[4 * lane + 1], in[lane]) << "shfl_up by 16 keeps the lane's own value";
  }
}

TEST(CpuWarpDetails, ExitedLanesDropOutOfWarpOperations) {
  const unsigned threads = 64;
  // Lane 0 exits before the others shuffle; lane 31 exits while lanes 0..30 wait for it.
  for (unsigned exiting : {0u, 31u, 17u}) {
    SCOPED_TRACE("exiting lane " + std::to_string(exiting));
    for (std::optional<uint64_t> seed : {std::optional<uint64_t>{}, std::optional<uint64_t>{7}}) {
      DeviceArray<int> d_out(poisoned<int>(2 * threads));
      const RunStatus status =
          run_exited_lane_shuffle({dim3(1), dim3(threads), 0, 1, seed}, d_out.get(), exiting);
      ASSERT_TRUE(status.ok) << status.message;
      const std::vector<int> out = d_out.to_host();
      for (unsigned i = 0; i < threads; ++i) {
        const unsigned lane = i % 32;
        if (lane == exiting) {
          EXPECT_TRUE(is_poison(out[2 * i]) && is_poison(out[2 * i + 1]))
              << "the exited lane wrote";
          continue;
        }
        EXPECT_TRUE(is_poison(out[2 * i])) << "lane " << lane << " read the exited lane's value";
        const unsigned partner = lane ^ 1u;
        if (partner == exiting) {
          EXPECT_TRUE(is_poison(out[2 * i + 1])) << "lane " << lane;
        } else {
          EXPECT_EQ(out[2 * i + 1], static_cast<int>(i - lane + partner)) << "lane " << lane;
        }
      }
    }
  }
}

TEST(CpuWarpDetails, UnwrittenDynamicSharedMemoryReadsNanInEveryBlock) {
  const unsigned blocks = 6, threads = 64;
  DeviceArray<float> d_out(poisoned<float>(blocks * threads));
  for (int workers : {1, 2}) {
    const RunStatus status = run_read_unwritten_shared(
        {dim3(blocks), dim3(threads), threads * sizeof(float), workers}, d_out.get());
    ASSERT_TRUE(status.ok) << status.message;
    const std::vector<float> out = d_out.to_host();
    for (unsigned i = 0; i < blocks * threads; ++i) {
      if ((i / threads) % 2 == 0) {
        EXPECT_EQ(out[i], 1.0f) << "element " << i;
      } else {
        EXPECT_TRUE(std::isnan(out[i])) << "element " << i << " of an odd block was not poisoned";
      }
    }
  }
}

}  // namespace
}  // namespace ts::test
