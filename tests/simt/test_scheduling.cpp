// How the CPU runtime schedules threads and blocks: the default order, schedule perturbation
// (a missing barrier shows as a result that changes with the seed), determinism with one
// worker, several workers giving the single worker's results, and concurrent launches from
// several host threads. CPU only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <thread>

#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

struct Tickets {
  std::vector<unsigned> first;
  std::vector<unsigned> second;
};

Tickets run_tickets_with(const Launch& launch) {
  const unsigned blocks = launch.grid.x;
  const unsigned threads = launch.block.x;
  DeviceArray<unsigned> counters(std::vector<unsigned>(blocks, 0));
  DeviceArray<unsigned> first(poisoned<unsigned>(blocks * threads));
  DeviceArray<unsigned> second(poisoned<unsigned>(blocks * threads));
  const RunStatus status = run_tickets(launch, counters.get(), first.get(), second.get());
  EXPECT_TRUE(status.ok) << status.message;
  return Tickets{first.to_host(), second.to_host()};
}

std::vector<unsigned> iota(unsigned count) {
  std::vector<unsigned> v(count);
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

TEST(Scheduling, DefaultOrderIsThreadOrderBeforeAndAfterABarrier) {
  const Tickets t = run_tickets_with({dim3(3), dim3(64), 0, 1});
  for (unsigned b = 0; b < 3; ++b) {
    const std::vector<unsigned> first(t.first.begin() + b * 64, t.first.begin() + (b + 1) * 64);
    const std::vector<unsigned> second(t.second.begin() + b * 64, t.second.begin() + (b + 1) * 64);
    EXPECT_EQ(first, iota(64)) << "block " << b;
    EXPECT_EQ(second, iota(64)) << "block " << b;
  }
}

TEST(Scheduling, PerturbationIsASeededPermutationThatWorkersDoNotChange) {
  const Tickets a = run_tickets_with({dim3(4), dim3(64), 0, 1, 42});
  const Tickets a_again = run_tickets_with({dim3(4), dim3(64), 0, 2, 42});  // two workers
  const Tickets b = run_tickets_with({dim3(4), dim3(64), 0, 1, 43});
  EXPECT_EQ(a.first, a_again.first);
  EXPECT_EQ(a.second, a_again.second);
  EXPECT_NE(a.first, b.first);
  for (unsigned block = 0; block < 4; ++block) {
    for (const std::vector<unsigned>* tickets : {&a.first, &a.second}) {
      std::vector<unsigned> order(tickets->begin() + block * 64,
                                  tickets->begin() + (block + 1) * 64);
      EXPECT_NE(order, iota(64)) << "block " << block << " ran in thread order";
      std::sort(order.begin(), order.end());
      EXPECT_EQ(order, iota(64)) << "block " << block << ": tickets are not a permutation";
    }
  }
  // After the barrier the order is drawn again, not the start order repeated.
  EXPECT_NE(a.first, a.second);
}

// What the tile-sum kernels compute: each thread sums, over the tiles, the element `distance`
// threads further on.
std::vector<float> tile_sums(const std::vector<float>& in, unsigned blocks, unsigned threads,
                             int tiles, unsigned distance = 1) {
  std::vector<float> out(blocks * threads);
  for (unsigned b = 0; b < blocks; ++b) {
    for (unsigned t = 0; t < threads; ++t) {
      float sum = 0.0f;  // the kernel's own order of additions, so equality is exact
      for (int k = 0; k < tiles; ++k) sum += in[(b * tiles + k) * threads + (t + distance) % threads];
      out[b * threads + t] = sum;
    }
  }
  return out;
}

TEST(Scheduling, MissingBarrierChangesTheResultWithTheSeedAndTheBarrierFixesIt) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned blocks = 4, threads = 64;
  const int tiles = 3;
  const std::vector<float> in = random.floats(blocks * threads * tiles, 0.5f, 1.5f);
  const std::vector<float> expected = tile_sums(in, blocks, threads, tiles);
  DeviceArray<float> d_in(in);

  std::set<std::vector<uint32_t>> racy_results;  // as bits, so NaNs compare
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    for (bool with_barrier : {false, true}) {
      DeviceArray<float> d_out(poisoned<float>(blocks * threads));
      const Launch launch{dim3(blocks), dim3(threads), threads * sizeof(float), 1, seed};
      const RunStatus status =
          run_shifted_tile_sum(launch, with_barrier, d_in.get(), d_out.get(), tiles);
      ASSERT_TRUE(status.ok) << status.message;
      const std::vector<float> out = d_out.to_host();
      if (with_barrier) {
        EXPECT_EQ(out, expected) << "seed " << seed
                                 << ": the correct kernel depends on the schedule";
      } else {
        std::vector<uint32_t> bits(out.size());
        std::memcpy(bits.data(), out.data(), out.size() * sizeof(float));
        racy_results.insert(bits);
      }
    }
  }
  EXPECT_GE(racy_results.size(), 2u) << "the racy kernel gave the same result for every seed";
}

// A __syncwarp where a __syncthreads is needed: each warp stores its part of the tile, passes its
// own warp's barrier and reads the next warp's part. Every warp stores before its __syncwarp, so a
// schedule that resumes a warp only after every other thread has run to its next barrier or warp
// operation (warps kept in step, as a FIFO ready queue keeps them) never shows the race. On a GPU
// the warps are independent, and perturbation must let one run ahead of another across warp
// operations (was: every seed gave the correct result).
TEST(Scheduling, PerturbationLetsAWarpRunAheadOfTheOthersAcrossWarpOperations) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned blocks = 4, threads = 128;
  const int tiles = 3;
  const std::vector<float> in = random.floats(blocks * threads * tiles, 0.5f, 1.5f);
  const std::vector<float> expected = tile_sums(in, blocks, threads, tiles, 32);
  DeviceArray<float> d_in(in);

  std::set<std::vector<uint32_t>> racy_results;  // as bits, so NaNs compare
  int racy_wrong = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    for (bool with_barrier : {false, true}) {
      DeviceArray<float> d_out(poisoned<float>(blocks * threads));
      const Launch launch{dim3(blocks), dim3(threads), threads * sizeof(float), 1, seed};
      const RunStatus status =
          run_warp_synced_tile_sum(launch, with_barrier, d_in.get(), d_out.get(), tiles);
      ASSERT_TRUE(status.ok) << status.message;
      const std::vector<float> out = d_out.to_host();
      if (with_barrier) {
        EXPECT_EQ(out, expected) << "seed " << seed << ": the correct kernel depends on the schedule";
      } else {
        std::vector<uint32_t> bits(out.size());
        std::memcpy(bits.data(), out.data(), out.size() * sizeof(float));
        racy_results.insert(bits);
        racy_wrong += std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)) != 0;
      }
    }
  }
  EXPECT_GE(racy_wrong, 1) << "the racy kernel gave the correct result for every seed";
  EXPECT_GE(racy_results.size(), 2u) << "the racy kernel gave the same result for every seed";
  // Without perturbation the order stays the documented one: the warps in step, the race hidden.
  DeviceArray<float> d_out(poisoned<float>(blocks * threads));
  ASSERT_TRUE(run_warp_synced_tile_sum({dim3(blocks), dim3(threads), threads * sizeof(float), 1}, false,
                                       d_in.get(), d_out.get(), tiles).ok);
  EXPECT_EQ(d_out.to_host(), expected);
}

TEST(Scheduling, OneWorkerIsBitIdenticalAcrossRuns) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const int n = 8000;
  const std::vector<int> ints = random.ints(n, -1000, 1000);
  const std::vector<float> floats = random.floats(n, -1.0f, 1.0f);  // a float sum's order shows
  DeviceArray<int> d_ints(ints);
  DeviceArray<float> d_floats(floats);
  std::vector<AtomicTotals> runs;
  for (int run = 0; run < 3; ++run) {
    DeviceArray<AtomicTotals> d_totals(std::vector<AtomicTotals>{AtomicTotals{}});
    const RunStatus status = run_atomics({dim3(n / 64), dim3(64), 0, 1}, d_ints.get(),
                                         d_floats.get(), n, d_totals.get());
    ASSERT_TRUE(status.ok) << status.message;
    runs.push_back(d_totals.to_host()[0]);
  }
  for (int run = 1; run < 3; ++run) {
    EXPECT_EQ(std::memcmp(&runs[0], &runs[run], sizeof(AtomicTotals)), 0) << "run " << run;
  }
}

TEST(Scheduling, SeveralWorkersGiveTheSingleWorkersResults) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned threads = 256, blocks = 61;
  const int n = static_cast<int>(threads * blocks);
  const std::vector<float> in = random.floats(n, -1.0f, 1.0f);
  DeviceArray<float> d_in(in);
  std::vector<std::vector<float>> results;
  for (int workers : {1, 2, 4, 0}) {
    DeviceArray<float> d_out(poisoned<float>(blocks));
    const RunStatus status =
        run_block_sum({dim3(blocks), dim3(threads), 0, workers}, d_in.get(), d_out.get(), n);
    ASSERT_TRUE(status.ok) << status.message;
    results.push_back(d_out.to_host());
  }
  for (size_t i = 1; i < results.size(); ++i)
    EXPECT_EQ(results[i], results[0]) << "worker setting " << i;
}

TEST(Scheduling, ConcurrentLaunchesFromTwoHostThreads) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned threads = 128, blocks = 40;
  const int n = static_cast<int>(threads * blocks);
  const std::vector<float> in_a = random.floats(n, -1.0f, 1.0f);
  const std::vector<float> in_b = random.floats(n, 0.0f, 2.0f);
  const auto expected_sums = [&](const std::vector<float>& in) {
    std::vector<double> sums(blocks, 0.0);
    for (int i = 0; i < n; ++i) sums[i / threads] += in[i];
    return sums;
  };
  const std::vector<double> want_a = expected_sums(in_a), want_b = expected_sums(in_b);

  std::atomic<int> failures{0};
  const auto launcher = [&](const std::vector<float>& in, const std::vector<double>& want,
                            bool also_deadlock) {
    DeviceArray<float> d_in(in);
    for (int round = 0; round < 20; ++round) {
      DeviceArray<float> d_out(poisoned<float>(blocks));
      const RunStatus status =
          run_block_sum({dim3(blocks), dim3(threads), 0, 2}, d_in.get(), d_out.get(), n);
      const std::vector<float> out = d_out.to_host();
      bool right = status.ok;
      for (unsigned b = 0; b < blocks && right; ++b) right = std::fabs(out[b] - want[b]) < 1e-4;
      if (!right) ++failures;
      if (also_deadlock) {  // a failing launch beside a working one must not disturb it
        DeviceArray<int> d_dead(poisoned<int>(64));
        if (run_deadlock({dim3(1), dim3(64), 0, 1}, d_dead.get()).ok) ++failures;
      }
    }
  };
  std::thread a(launcher, std::cref(in_a), std::cref(want_a), false);
  std::thread b(launcher, std::cref(in_b), std::cref(want_b), true);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace ts::test
