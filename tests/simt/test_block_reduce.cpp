// Block reductions through shared memory and the reducing barriers, on either backend.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

TEST(BlockReduce, SumsEveryBlockForManyBlockSizes) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  for (unsigned threads : {1u, 32u, 100u, 256u, 1024u}) {
    SCOPED_TRACE("blockDim.x = " + std::to_string(threads));
    const int n = static_cast<int>(threads) * 5 + 17;  // a partial last block
    const unsigned blocks = (static_cast<unsigned>(n) + threads - 1) / threads;
    const std::vector<float> in = random.floats(n, -1.0f, 1.0f);
    DeviceArray<float> d_in(in);
    DeviceArray<float> d_out(poisoned<float>(blocks));

    const RunStatus status =
        run_block_sum({dim3(blocks), dim3(threads)}, d_in.get(), d_out.get(), n);
    ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;

    const std::vector<float> out = d_out.to_host();
    for (unsigned b = 0; b < blocks; ++b) {
      double expected = 0.0;
      double magnitude = 0.0;
      for (unsigned t = 0; t < threads && b * threads + t < static_cast<unsigned>(n); ++t) {
        expected += in[b * threads + t];
        magnitude += std::fabs(in[b * threads + t]);
      }
      EXPECT_NEAR(out[b], expected, 1e-6 * magnitude + 1e-6) << "block " << b;
    }
  }
}

TEST(BlockReduce, SyncthreadsCountAndAllAndAnyOverTheBlock) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned threads = 96;
  const unsigned blocks = 6;
  std::vector<int> pred = random.ints(threads * blocks, 0, 1);
  // Blocks 0 and 1 are uniform, so that `and` and `or` see both answers.
  for (unsigned t = 0; t < threads; ++t) {
    pred[t] = 1;
    pred[threads + t] = 0;
  }
  DeviceArray<int> d_pred(pred);
  DeviceArray<int> d_votes(poisoned<int>(3 * blocks));

  const RunStatus status =
      run_block_vote({dim3(blocks), dim3(threads)}, d_pred.get(), d_votes.get());
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;

  const std::vector<int> votes = d_votes.to_host();
  for (unsigned b = 0; b < blocks; ++b) {
    int count = 0;
    for (unsigned t = 0; t < threads; ++t) count += pred[b * threads + t];
    EXPECT_EQ(votes[3 * b + 0], count) << "block " << b;
    EXPECT_EQ(votes[3 * b + 1], count == static_cast<int>(threads) ? 1 : 0) << "block " << b;
    EXPECT_EQ(votes[3 * b + 2], count > 0 ? 1 : 0) << "block " << b;
  }
}

}  // namespace
}  // namespace ts::test
