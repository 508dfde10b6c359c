// The host side of a launch: invalid configurations, cancellation, progress, worker indices,
// fiber stacks. CPU only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "instrumentation/simt/cuda_compat.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

using ::testing::HasSubstr;

// Host-only kernels of these tests: they exercise the host API (progress, cancellation,
// worker_index, stack sizes) that has no GPU counterpart.
__global__ void block_total_kernel(const float* in, float* out) {
  __shared__ float total;
  if (threadIdx.x == 0) total = 0.0f;
  __syncthreads();
  atomicAdd(&total, in[blockIdx.x * blockDim.x + threadIdx.x]);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

struct BadLaunch {
  simt::LaunchConfig config;
  simt::LaunchOptions options;
  const char* expected;
};

TEST(LaunchControl, InvalidConfigurationsFailWithAMessageAndRunNothing) {
  simt::LaunchOptions small_stack;
  small_stack.stack_bytes = 4096;
  simt::LaunchOptions negative_workers;
  negative_workers.workers = -1;
  const BadLaunch cases[] = {
      {{dim3(0), dim3(32)}, {}, "grid (0,1,1) has a zero dimension"},
      {{dim3(1, 0, 1), dim3(32)}, {}, "grid (1,0,1) has a zero dimension"},
      {{dim3(1), dim3(32, 1, 0)}, {}, "block (32,1,0) has a zero dimension"},
      {{dim3(1), dim3(1025)}, {}, "block (1025,1,1) exceeds the limits"},
      {{dim3(1), dim3(64, 32)}, {}, "block (64,32,1) has 2048 threads; a block has at most 1024"},
      {{dim3(1), dim3(1, 1, 65)}, {}, "z <= 64"},
      {{dim3(1, 70000), dim3(32)}, {}, "grid (1,70000,1) exceeds the limits"},
      {{dim3(1), dim3(32), simt::kMaxDynamicSharedBytes + 1},
       {},
       "dynamic shared memory of 232449 bytes"},
      {{dim3(1), dim3(32)}, negative_workers, "workers = -1 is negative"},
      {{dim3(1), dim3(32)}, small_stack, "stack_bytes = 4096 is below the minimum"},
  };
  for (const BadLaunch& bad : cases) {
    std::vector<float> out = poisoned<float>(1);
    const std::vector<float> in(32, 1.0f);
    const simt::LaunchResult result =
        simt::launch(bad.config, bad.options, block_total_kernel, in.data(), out.data());
    EXPECT_EQ(result.status, simt::LaunchResult::Status::failed) << bad.expected;
    EXPECT_THAT(result.message, HasSubstr("invalid launch: "));
    EXPECT_THAT(result.message, HasSubstr(bad.expected));
    EXPECT_TRUE(is_poison(out[0])) << bad.expected << ": the kernel ran";
  }
  void (*no_kernel)(const float*, float*) = nullptr;
  const simt::LaunchResult result =
      simt::launch({dim3(1), dim3(32)}, {}, no_kernel, nullptr, nullptr);
  EXPECT_THAT(result.message, HasSubstr("null pointer"));
}

TEST(LaunchControl, CancelledBeforeTheStartRunsNoBlock) {
  const std::atomic<bool> cancel{true};
  simt::LaunchOptions options;
  options.cancel = &cancel;
  const std::vector<float> in(64 * 8, 1.0f);
  std::vector<float> out = poisoned<float>(8);
  const simt::LaunchResult result =
      simt::launch({dim3(8), dim3(64)}, options, block_total_kernel, in.data(), out.data());
  EXPECT_EQ(result.status, simt::LaunchResult::Status::cancelled);
  EXPECT_THAT(result.message, HasSubstr("cancelled after 0 of 8 blocks"));
  for (float v : out) EXPECT_TRUE(is_poison(v));
}

TEST(LaunchControl, CancelledFromTheProgressCallbackStopsEarlyAndKeepsFinishedBlocks) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned blocks = 4000, threads = 64;
  const int n = static_cast<int>(blocks * threads);
  const std::vector<float> in = random.floats(n, -1.0f, 1.0f);
  std::vector<float> out = poisoned<float>(blocks);
  std::atomic<bool> cancel{false};
  simt::LaunchOptions options;
  options.workers = 2;
  options.cancel = &cancel;
  options.progress = [&cancel](uint64_t done, uint64_t) {
    if (done > 0) cancel.store(true);
  };
  const simt::LaunchResult result = simt::launch({dim3(blocks), dim3(threads)}, options,
                                                 block_total_kernel, in.data(), out.data());
  EXPECT_EQ(result.status, simt::LaunchResult::Status::cancelled) << result.message;
  EXPECT_THAT(result.message, HasSubstr("of 4000 blocks"));

  unsigned finished = 0;
  for (unsigned b = 0; b < blocks; ++b) {
    if (is_poison(out[b])) continue;
    ++finished;
    double sum = 0.0;
    for (unsigned t = 0; t < threads; ++t) sum += in[b * threads + t];
    EXPECT_NEAR(out[b], sum, 1e-4) << "block " << b;
  }
  EXPECT_GT(finished, 0u);
  EXPECT_LT(finished, blocks / 2) << "cancellation did not stop the launch early";
}

TEST(LaunchControl, ProgressIsSerialisedMonotonicAndEndsAtTheTotal) {
  const unsigned blocks = 3000, threads = 128;
  const std::vector<float> in(blocks * threads, 0.5f);
  std::vector<float> out = poisoned<float>(blocks);
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  std::atomic<int> inside{0};
  bool overlapped = false;
  simt::LaunchOptions options;
  options.workers = 2;
  options.progress = [&](uint64_t done, uint64_t total) {
    if (inside.fetch_add(1) != 0) overlapped = true;
    calls.emplace_back(done, total);
    inside.fetch_sub(1);
  };
  const simt::LaunchResult result = simt::launch({dim3(blocks), dim3(threads)}, options,
                                                 block_total_kernel, in.data(), out.data());
  ASSERT_TRUE(result.ok()) << result.message;
  ASSERT_FALSE(calls.empty());
  EXPECT_FALSE(overlapped) << "two progress calls ran at once";
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].second, blocks);
    if (i > 0) {
      EXPECT_GE(calls[i].first, calls[i - 1].first) << "progress went backwards";
    }
  }
  EXPECT_EQ(calls.back().first, blocks);
  EXPECT_LT(calls.size(), blocks / 10) << "progress is not throttled";
  for (float v : out) EXPECT_EQ(v, 64.0f);
}

__global__ void worker_index_kernel(unsigned* workers) {
  if (threadIdx.x == 0) workers[blockIdx.x] = simt::worker_index();
}

TEST(LaunchControl, WorkerIndexIsBelowTheWorkerCount) {
  for (int worker_count : {1, 2}) {
    std::vector<unsigned> seen = poisoned<unsigned>(200);
    simt::LaunchOptions options;
    options.workers = worker_count;
    ASSERT_TRUE(
        simt::launch({dim3(200), dim3(32)}, options, worker_index_kernel, seen.data()).ok());
    for (unsigned w : seen) EXPECT_LT(w, static_cast<unsigned>(worker_count));
  }
  EXPECT_EQ(simt::worker_index(), 0u);
  const uint64_t before = simt::clock_ns();
  EXPECT_GE(simt::clock_ns(), before);
}

constexpr unsigned kBigFrameFloats = 160000;  // 640 KB: more than any default fiber stack

__global__ void big_frame_kernel(float* out) {
  volatile float frame[kBigFrameFloats];
  for (unsigned i = 0; i < kBigFrameFloats; i += 997)
    frame[i] = static_cast<float>(i + threadIdx.x);
  __syncthreads();
  float sum = 0.0f;
  for (unsigned i = 0; i < kBigFrameFloats; i += 997) sum += frame[i];
  out[threadIdx.x] = sum;
}

TEST(LaunchControl, LargerStacksOnRequest) {
  std::vector<float> out = poisoned<float>(8);
  simt::LaunchOptions options;
  options.workers = 1;
  options.stack_bytes = 4 * 1024 * 1024;
  const simt::LaunchResult result =
      simt::launch({dim3(1), dim3(8)}, options, big_frame_kernel, out.data());
  ASSERT_TRUE(result.ok()) << result.message;
  for (unsigned t = 0; t < 8; ++t) {
    float want = 0.0f;
    for (unsigned i = 0; i < kBigFrameFloats; i += 997) want += static_cast<float>(i + t);
    EXPECT_EQ(out[t], want);
  }
}

TEST(LaunchControlDeathTest, StackOverflowHitsTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<float> out(8);
  simt::LaunchOptions options;
  options.workers = 1;  // the default stacks cannot hold big_frame_kernel's frame: the stack
                        // probes (-fstack-clash-protection) reach the guard page first
  EXPECT_DEATH(simt::launch({dim3(1), dim3(8)}, options, big_frame_kernel, out.data()), "");
}

}  // namespace
}  // namespace ts::test
