// Launch workers kept between launches (instrumentation/simt/src/worker_pool.h) and blocks
// claimed a few at a time: every block still runs exactly once, on a worker of its launch,
// whether the pool or threads of the launch's own run it. CPU only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/simt/src/worker_pool.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

using simt::detail::WorkerPool;

// Each block sums its slice (an integer sum: exact whatever the order) and counts its runs.
__global__ void slice_sum_kernel(const int* in, long long* sums, int* runs, unsigned* worker) {
  __shared__ long long total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  atomicAdd(reinterpret_cast<unsigned long long*>(&total),
            static_cast<unsigned long long>(static_cast<long long>(in[blockIdx.x * blockDim.x +
                                                                       threadIdx.x])));
  __syncthreads();
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = total;
    atomicAdd(&runs[blockIdx.x], 1);
    worker[blockIdx.x] = simt::worker_index();
  }
}

// Runs slice_sum_kernel on fresh random data and checks every block against the host.
void check_launch(TestRandom& random, unsigned blocks, unsigned threads, int workers) {
  const std::vector<int> in = random.ints(size_t{blocks} * threads, -1000000, 1000000);
  std::vector<long long> sums = poisoned<long long>(blocks);
  std::vector<int> runs(blocks, 0);
  std::vector<unsigned> worker = poisoned<unsigned>(blocks);
  simt::LaunchOptions options;
  options.workers = workers;
  const simt::LaunchResult result =
      simt::launch({dim3(blocks), dim3(threads)}, options, slice_sum_kernel, in.data(),
                   sums.data(), runs.data(), worker.data());
  ASSERT_TRUE(result.ok()) << result.message;
  for (unsigned b = 0; b < blocks; ++b) {
    long long want = 0;
    for (unsigned t = 0; t < threads; ++t) want += in[size_t{b} * threads + t];
    ASSERT_EQ(sums[b], want) << "block " << b << ", " << random.trace();
    ASSERT_EQ(runs[b], 1) << "block " << b << " ran " << runs[b] << " times";
    ASSERT_LT(worker[b], static_cast<unsigned>(workers)) << "block " << b;
  }
}

TEST(WorkerPool, SuccessiveLaunchesRunEveryBlockOnce) {
  TestRandom random;
  // Block sizes from those claimed several at a time (32) to one at a time (256), block
  // counts that leave a partial last claim.
  for (int i = 0; i < 40; ++i) {
    check_launch(random, 37 + i, i % 2 == 0 ? 32 : 256, 2);
    if (HasFatalFailure()) return;
  }
}

TEST(WorkerPool, ConcurrentLaunchesFromSeveralHostThreads) {
  // One launch at a time has the pool; the others start threads of their own.
  std::vector<std::thread> hosts;
  std::atomic<int> failures{0};
  for (int h = 0; h < 4; ++h) {
    hosts.emplace_back([&failures] {
      TestRandom random;
      for (int i = 0; i < 10; ++i) {
        check_launch(random, 50, 64, 2);
        if (::testing::Test::HasFailure()) ++failures;
      }
    });
  }
  for (std::thread& t : hosts) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(WorkerPool, LaunchFromAProgressCallback) {
  // The callback runs on a worker while the outer launch may hold the pool.
  TestRandom random;
  const std::vector<int> in = random.ints(64 * 32, -1000, 1000);
  std::vector<long long> sums = poisoned<long long>(64);
  std::vector<int> runs(64, 0);
  std::vector<unsigned> worker = poisoned<unsigned>(64);
  std::atomic<int> inner_launches{0};
  simt::LaunchOptions options;
  options.workers = 2;
  options.progress = [&](uint64_t, uint64_t) {
    TestRandom inner_random;
    check_launch(inner_random, 20, 32, 2);
    ++inner_launches;
  };
  const simt::LaunchResult result =
      simt::launch({dim3(64), dim3(32)}, options, slice_sum_kernel, in.data(), sums.data(),
                   runs.data(), worker.data());
  ASSERT_TRUE(result.ok()) << result.message;
  EXPECT_GE(inner_launches.load(), 1);
  for (unsigned b = 0; b < 64; ++b) {
    long long want = 0;
    for (unsigned t = 0; t < 32; ++t) want += in[b * 32 + t];
    EXPECT_EQ(sums[b], want) << "block " << b << ", " << random.trace();
    EXPECT_EQ(runs[b], 1) << "block " << b;
  }
}

TEST(WorkerPool, RunsEachIndexOnceOnAnotherThreadEveryTime) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "the pool keeps no helper here";
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> calls[2] = {0, 0};
    std::atomic<bool> helper_on_caller{false};
    const std::function<void(unsigned)> job = [&](unsigned index) {
      ASSERT_LT(index, 2u);
      ++calls[index];
      if (index == 1 && std::this_thread::get_id() == caller) helper_on_caller = true;
    };
    ASSERT_TRUE(WorkerPool::instance().try_run(1, job)) << "round " << round;
    EXPECT_EQ(calls[0].load(), 1) << "round " << round;
    EXPECT_EQ(calls[1].load(), 1) << "round " << round;
    EXPECT_FALSE(helper_on_caller.load());
  }
}

TEST(WorkerPool, RefusesWhatItCannotTake) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "the pool keeps no helper here";
  int ran = 0;
  const std::function<void(unsigned)> count = [&ran](unsigned) { ++ran; };
  // More helpers than cores: refused, nothing run.
  EXPECT_FALSE(WorkerPool::instance().try_run(std::thread::hardware_concurrency(), count));
  EXPECT_EQ(ran, 0);
  // Asked again while leased (from inside a job): refused, nothing run.
  std::atomic<int> nested_refused{0};
  const std::function<void(unsigned)> nested = [&](unsigned index) {
    if (index == 0 && !WorkerPool::instance().try_run(1, count)) ++nested_refused;
  };
  ASSERT_TRUE(WorkerPool::instance().try_run(1, nested));
  EXPECT_EQ(nested_refused.load(), 1);
  EXPECT_EQ(ran, 0);
}

}  // namespace
}  // namespace ts::test
