// Synchronisation bugs are reported, never hung: a deadlock, a divergent barrier, a barrier
// an exited thread can never reach, warp operations whose lanes disagree, a mask without the
// calling lane, a bad shuffle width, __trap, an exception thrown by kernel code. Each report
// names the block, the thread(s) and the kernel's file:line, and the runtime stays usable.
// CPU only (on a GPU these kernels hang or misbehave).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "instrumentation/simt/cuda_compat.h"
#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr const char* kFaulty = "faulty_sync.cuh";

// A correct kernel right after a failed launch: the fiber pool and the worker state survived.
void expect_runtime_still_works() {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const std::vector<float> in = random.floats(512, -1.0f, 1.0f);
  DeviceArray<float> d_in(in);
  DeviceArray<float> d_out(poisoned<float>(4));
  const RunStatus status = run_block_sum({dim3(4), dim3(128), 0, 2}, d_in.get(), d_out.get(), 512);
  ASSERT_TRUE(status.ok) << status.message;
  const std::vector<float> out = d_out.to_host();
  for (unsigned b = 0; b < 4; ++b) {
    double sum = 0.0;
    for (unsigned t = 0; t < 128; ++t) sum += in[b * 128 + t];
    EXPECT_NEAR(out[b], sum, 1e-4);
  }
}

Launch one_worker(dim3 grid, dim3 block) { return Launch{grid, block, 0, 1}; }

TEST(Diagnostics, DeadlockNamesBlockThreadsAndBothPlaces) {
  DeviceArray<int> out(poisoned<int>(2 * 64));
  const RunStatus status = run_deadlock(one_worker(dim3(2), dim3(64)), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message,
              AllOf(HasSubstr("deadlock in block (0,0,0)"),
                    HasSubstr("32 thread(s) wait in __syncwarp(mask 0xffffffff) at"),
                    HasSubstr(marker_place(kFaulty, "deadlock syncwarp")),
                    HasSubstr("32 thread(s) wait in __syncthreads at"),
                    HasSubstr(marker_place(kFaulty, "deadlock syncthreads")),
                    HasSubstr("(thread (0,0,0)"), HasSubstr("(thread (16,0,0)")))
      << status.message;
  for (int v : out.to_host()) EXPECT_TRUE(is_poison(v)) << "a thread got past the deadlock";
  expect_runtime_still_works();
}

TEST(Diagnostics, DeadlockOnSeveralWorkersIsReportedNotHung) {
  DeviceArray<int> out(poisoned<int>(64 * 96));
  const RunStatus status = run_deadlock({dim3(64), dim3(96), 0, 2}, out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message, AllOf(HasSubstr("deadlock in block ("), HasSubstr(kFaulty)));
  expect_runtime_still_works();
}

TEST(Diagnostics, DivergentBarrierNamesBothThreadsAndPlaces) {
  DeviceArray<int> out(poisoned<int>(64));
  const RunStatus status = run_divergent_barrier(one_worker(dim3(1), dim3(64)), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message, AllOf(HasSubstr("divergent __syncthreads in block (0,0,0)"),
                                    HasSubstr("thread (1,0,0) reached it at"),
                                    HasSubstr(marker_place(kFaulty, "divergent odd")),
                                    HasSubstr("thread (0,0,0) waits at"),
                                    HasSubstr(marker_place(kFaulty, "divergent even"))))
      << status.message;
  expect_runtime_still_works();
}

TEST(Diagnostics, BarrierAfterAThreadExitedIsReported) {
  DeviceArray<int> out(poisoned<int>(64));
  const RunStatus status = run_exit_before_barrier(one_worker(dim3(1), dim3(64)), out.get(), 0);
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(
      status.message,
      AllOf(HasSubstr("thread (1,0,0) of block (0,0,0) reached __syncthreads at"),
            HasSubstr(marker_place(kFaulty, "exit barrier")),
            HasSubstr("thread (0,0,0) has already exited"), HasSubstr("only part of the block")))
      << status.message;
  expect_runtime_still_works();
}

TEST(Diagnostics, ThreadExitingWhileOthersWaitIsReported) {
  DeviceArray<int> out(poisoned<int>(2 * 64));
  const RunStatus status = run_exit_before_barrier(one_worker(dim3(2), dim3(64)), out.get(), 63);
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message,
              AllOf(HasSubstr("thread (63,0,0) of block (0,0,0) exited while 63 thread(s) wait at "
                              "__syncthreads at"),
                    HasSubstr(marker_place(kFaulty, "exit barrier"))))
      << status.message;
  expect_runtime_still_works();
}

TEST(Diagnostics, ExitBeforeABarrierIsReportedInAnyOrder) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    DeviceArray<int> out(poisoned<int>(64));
    const RunStatus status =
        run_exit_before_barrier({dim3(1), dim3(64), 0, 1, seed}, out.get(), 17);
    ASSERT_FALSE(status.ok) << "seed " << seed;
    EXPECT_THAT(status.message, AllOf(HasSubstr("thread (17,0,0)"), HasSubstr("exited"),
                                      HasSubstr(marker_place(kFaulty, "exit barrier"))))
        << "seed " << seed << ": " << status.message;
  }
}

TEST(Diagnostics, WarpLanesDisagreeingOnTheMask) {
  DeviceArray<int> out(poisoned<int>(32));
  const RunStatus status = run_warp_mask_disagreement(one_worker(dim3(1), dim3(32)), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message, AllOf(HasSubstr("warp lanes disagree on the mask"),
                                    HasSubstr("thread (1,0,0) of block (0,0,0)"),
                                    HasSubstr("__syncwarp(mask 0x0000ffff)"),
                                    HasSubstr("__syncwarp(mask 0xffffffff)"),
                                    HasSubstr(marker_place(kFaulty, "mask disagreement"))))
      << status.message;
  expect_runtime_still_works();
}

TEST(Diagnostics, WarpLanesDisagreeingOnTheOperation) {
  DeviceArray<int> out(poisoned<int>(32));
  const RunStatus status = run_warp_op_disagreement(one_worker(dim3(1), dim3(32)), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message, AllOf(HasSubstr("warp lanes disagree on the operation"),
                                    HasSubstr("thread (1,0,0)"), HasSubstr("__ballot_sync"),
                                    HasSubstr(marker_place(kFaulty, "op disagreement ballot")),
                                    HasSubstr("__shfl_xor_sync"),
                                    HasSubstr(marker_place(kFaulty, "op disagreement shuffle"))))
      << status.message;
  expect_runtime_still_works();
}

TEST(Diagnostics, MaskWithoutTheCallingLane) {
  DeviceArray<int> out(poisoned<int>(32));
  const RunStatus status = run_mask_omits_lane(one_worker(dim3(1), dim3(32)), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message, AllOf(HasSubstr("thread (0,0,0) of block (0,0,0)"),
                                    HasSubstr("__shfl_sync(mask 0x00000002)"),
                                    HasSubstr("the mask omits the calling lane"),
                                    HasSubstr(marker_place(kFaulty, "mask omits lane"))))
      << status.message;
}

TEST(Diagnostics, ShuffleWidthNotAPowerOfTwo) {
  DeviceArray<int> out(poisoned<int>(32));
  const RunStatus status = run_bad_width(one_worker(dim3(1), dim3(32)), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message, AllOf(HasSubstr("width 12"), HasSubstr("power of two"),
                                    HasSubstr(marker_place(kFaulty, "bad width"))))
      << status.message;
}

TEST(Diagnostics, TrapEndsTheLaunch) {
  DeviceArray<int> out(poisoned<int>(3 * 32));
  const RunStatus status = run_trap(one_worker(dim3(3), dim3(32)), out.get(), 5);
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message,
              AllOf(HasSubstr("thread (5,0,0) of block (0,0,0)"), HasSubstr("__trap() called"),
                    HasSubstr(marker_place(kFaulty, "trap"))))
      << status.message;
  const std::vector<int> values = out.to_host();
  for (unsigned i = 32; i < values.size(); ++i) {
    EXPECT_TRUE(is_poison(values[i])) << "block " << i / 32 << " ran after the trap";
  }
  expect_runtime_still_works();
}

// Host-only: a kernel whose thread 3 throws (kernel code calling host code that throws).
__global__ void throwing_kernel(int* out) {
  __syncthreads();
  if (threadIdx.x == 3) throw std::runtime_error("boom from thread 3");
  __syncthreads();
  out[threadIdx.x] = 1;
}

TEST(Diagnostics, ExceptionFromKernelCodeIsReported) {
  std::vector<int> out = poisoned<int>(32);
  const simt::LaunchResult result =
      simt::launch({dim3(1), dim3(32)}, {.workers = 1}, throwing_kernel, out.data());
  ASSERT_EQ(result.status, simt::LaunchResult::Status::failed);
  EXPECT_THAT(result.message, AllOf(HasSubstr("thread (3,0,0) of block (0,0,0)"),
                                    HasSubstr("the kernel threw an exception: boom from thread 3")))
      << result.message;
  expect_runtime_still_works();
}

// Host-only: kernel-side objects with destructors, in a block that deadlocks. Abandoning the
// block unwinds every suspended fiber, so every destructor runs, including one that itself
// calls __syncthreads (which must return, not switch, during the unwinding).
struct CountedOnDestruction {
  std::atomic<int>* destroyed;
  ~CountedOnDestruction() { destroyed->fetch_add(1); }
};
struct BarrierOnDestruction {
  ~BarrierOnDestruction() { __syncthreads(); }
};
__global__ void deadlock_with_destructors_kernel(std::atomic<int>* destroyed) {
  CountedOnDestruction counted{destroyed};
  BarrierOnDestruction barrier;
  if (threadIdx.x % 32 < 16) {
    __syncwarp();
  } else {
    __syncthreads();
  }
}

TEST(Diagnostics, AbandonedFibersRunTheirDestructors) {
  std::atomic<int> destroyed{0};
  const simt::LaunchResult result = simt::launch({dim3(1), dim3(64)}, {.workers = 1},
                                                 deadlock_with_destructors_kernel, &destroyed);
  ASSERT_EQ(result.status, simt::LaunchResult::Status::failed);
  EXPECT_THAT(result.message, HasSubstr("deadlock in block (0,0,0)"));
  EXPECT_EQ(destroyed.load(), 64) << "every started thread's stack is unwound";
  expect_runtime_still_works();
}

TEST(Diagnostics, BarrierCalledOutsideALaunchThrows) {
  EXPECT_THROW(__syncthreads(), std::runtime_error);
  EXPECT_THROW(__syncwarp(), std::runtime_error);
  // Outside a launch the coordinates read as a one-thread launch, not a crash.
  EXPECT_EQ(threadIdx.x, 0u);
  EXPECT_EQ(blockIdx.y, 0u);
  EXPECT_EQ(blockDim.x, 1u);
  EXPECT_EQ(gridDim.z, 1u);
}

}  // namespace
}  // namespace ts::test
