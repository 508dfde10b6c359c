// Warp shuffles of every flavour, width and several masks, for each supported value type, on
// either backend. Expected values follow the PTX definition of shfl.sync, written out here
// independently of the runtime.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

enum Flavour { kIdx = 0, kUp = 1, kDown = 2, kXor = 3 };

// The lane whose value `lane` receives, or `lane` itself where the flavour keeps its own.
unsigned expected_source(Flavour flavour, unsigned lane, int arg, unsigned width) {
  const unsigned group_first = lane / width * width;
  const unsigned group_last = group_first + width - 1;
  const unsigned a = static_cast<unsigned>(arg);
  switch (flavour) {
    case kIdx: return group_first + (a % 32) % width;  // wraps within the group
    case kUp: return lane - group_first >= a ? lane - a : lane;
    case kDown: return lane + a <= group_last ? lane + a : lane;
    case kXor: return (lane ^ a) <= group_last ? (lane ^ a) : lane;  // earlier groups allowed
  }
  return lane;
}

template <typename T>
class WarpShuffle : public ::testing::Test {};
using ShuffledTypes = ::testing::Types<float, int, double, long long, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(WarpShuffle, ShuffledTypes);

TYPED_TEST(WarpShuffle, EveryFlavourWidthAndMask) {
  using T = TypeParam;
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned threads = 64;  // two full warps
  const std::vector<T> in = random.bits<T>(threads);
  DeviceArray<T> d_in(in);

  for (unsigned mask : {0xffffffffu, 0x0000ffffu, 0xf0f0f0f0u, 0x80000001u}) {
    for (unsigned width : {1u, 2u, 4u, 8u, 16u, 32u}) {
      for (int arg : {0, 1, 3, 5, 13, 31}) {
        SCOPED_TRACE("mask " + std::to_string(mask) + " width " + std::to_string(width) + " arg " +
                     std::to_string(arg));
        DeviceArray<T> d_out(poisoned<T>(4 * threads));
        const RunStatus status = run_shuffle_flavours<T>(
            {dim3(1), dim3(threads)}, d_in.get(), d_out.get(), mask, arg, static_cast<int>(width));
        ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
        const std::vector<T> out = d_out.to_host();

        for (unsigned i = 0; i < threads; ++i) {
          const unsigned lane = i % 32;
          const bool in_mask = ((mask >> lane) & 1u) != 0;
          for (Flavour f : {kIdx, kUp, kDown, kXor}) {
            const T& got = out[4 * i + f];
            if (!in_mask) {
              EXPECT_TRUE(is_poison(got)) << "lane " << lane << " is outside the mask but wrote";
              continue;
            }
            const unsigned source = expected_source(f, lane, arg, width);
            if (((mask >> source) & 1u) == 0) continue;  // undefined on a GPU
            const T& want = in[i - lane + source];
            EXPECT_EQ(std::memcmp(&got, &want, sizeof(T)), 0)
                << "flavour " << f << ", lane " << lane << " should hold lane " << source
                << "'s value";
          }
        }
      }
    }
  }
}

TEST(WarpReduce, ButterflyDownScanAndBroadcastForEveryWidth) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned threads = 128;
  const unsigned blocks = 3;
  const std::vector<int> in = random.ints(threads * blocks, -1000, 1000);
  DeviceArray<int> d_in(in);
  for (unsigned width : {1u, 2u, 4u, 8u, 16u, 32u}) {
    SCOPED_TRACE("width " + std::to_string(width));
    DeviceArray<int> d_out(poisoned<int>(4 * threads * blocks));
    const RunStatus status = run_warp_reduce({dim3(blocks), dim3(threads)}, d_in.get(), d_out.get(),
                                             static_cast<int>(width));
    ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
    const std::vector<int> out = d_out.to_host();
    for (unsigned i = 0; i < threads * blocks; ++i) {
      const unsigned first = i / width * width;  // the group's first thread
      int group_sum = 0;
      int prefix = 0;
      for (unsigned j = first; j < first + width; ++j) group_sum += in[j];
      for (unsigned j = first; j <= i; ++j) prefix += in[j];
      EXPECT_EQ(out[4 * i + 0], group_sum) << "butterfly, thread " << i;
      if (i == first) {
        EXPECT_EQ(out[4 * i + 1], group_sum) << "shfl_down reduction, thread " << i;
      }
      EXPECT_EQ(out[4 * i + 2], prefix) << "shfl_up scan, thread " << i;
      EXPECT_EQ(out[4 * i + 3], group_sum) << "broadcast, thread " << i;
    }
  }
}

}  // namespace
}  // namespace ts::test
