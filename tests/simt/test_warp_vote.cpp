// Warp votes (__ballot_sync, __any_sync, __all_sync), __match_any_sync and __reduce_add_sync
// over full and partial masks, on either backend.
#include <gtest/gtest.h>

#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

TEST(WarpVote, BallotAnyAllMatchAndReduceOverTheMask) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned threads = 128;  // four warps: random, all true, all false, random
  std::vector<int> pred = random.ints(threads, 0, 1);
  for (unsigned lane = 0; lane < 32; ++lane) {
    pred[32 + lane] = 1;
    pred[64 + lane] = 0;
  }
  std::vector<unsigned> key(threads);
  for (unsigned& k : key) k = static_cast<unsigned>(random.engine()() % 4);  // repeats, for match
  DeviceArray<int> d_pred(pred);
  DeviceArray<unsigned> d_key(key);

  for (unsigned mask : {0xffffffffu, 0x0000ffffu, 0x55555555u, 0x80000000u}) {
    SCOPED_TRACE("mask " + std::to_string(mask));
    DeviceArray<unsigned> d_out(poisoned<unsigned>(5 * threads));
    const RunStatus status =
        run_warp_vote({dim3(1), dim3(threads)}, d_pred.get(), d_key.get(), d_out.get(), mask);
    ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
    const std::vector<unsigned> out = d_out.to_host();

    for (unsigned warp = 0; warp < threads / 32; ++warp) {
      unsigned ballot = 0;
      unsigned key_sum = 0;
      for (unsigned lane = 0; lane < 32; ++lane) {
        if (((mask >> lane) & 1u) == 0) continue;
        if (pred[warp * 32 + lane] != 0) ballot |= 1u << lane;
        key_sum += key[warp * 32 + lane];
      }
      for (unsigned lane = 0; lane < 32; ++lane) {
        const unsigned i = warp * 32 + lane;
        if (((mask >> lane) & 1u) == 0) {
          EXPECT_TRUE(is_poison(out[5 * i])) << "lane " << lane << " is outside the mask but wrote";
          continue;
        }
        unsigned same_key = 0;
        for (unsigned other = 0; other < 32; ++other) {
          if (((mask >> other) & 1u) != 0 && key[warp * 32 + other] == key[i])
            same_key |= 1u << other;
        }
        EXPECT_EQ(out[5 * i + 0], ballot) << "ballot, thread " << i;
        EXPECT_EQ(out[5 * i + 1], ballot != 0 ? 1u : 0u) << "any, thread " << i;
        EXPECT_EQ(out[5 * i + 2], ballot == mask ? 1u : 0u) << "all, thread " << i;
        EXPECT_EQ(out[5 * i + 3], same_key) << "match_any, thread " << i;
        EXPECT_EQ(out[5 * i + 4], key_sum) << "reduce_add, thread " << i;
      }
    }
  }
}

}  // namespace
}  // namespace ts::test
