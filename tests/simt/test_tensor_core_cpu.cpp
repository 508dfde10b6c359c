// What only the CPU runtime promises about the tensor-core operations (test_simt alone):
//  * mma's documented arithmetic, bit for bit (exact products, fp32 sums in k order), and the
//    same registers under any schedule;
//  * cp.async landing at the wait, so that a read before the wait shows the old contents;
//  * misuse reported with the kernel's file:line instead of hanging or computing garbage: a
//    lane missing from an mma (exited, at a barrier, in a partial warp), lanes at two places or
//    in two operations, misaligned ldmatrix rows and cp.async addresses, an oversized
//    src-size, wmma lanes passing different pointers, a call outside a launch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/simt/tensor_core.h"
#include "tests/simt/kernel_launchers.h"
#include "tests/simt/tensor_core_reference.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr const char* kMisuse = "tensor_core_misuse.cuh";
constexpr const char* kMmaF16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";

Launch one_warp(uint64_t seed = 0) {
  Launch launch{dim3(1), dim3(32), 0, 1};
  if (seed != 0) launch.perturb_seed = seed;
  return launch;
}

// Random operand registers for `warps` warps (the bits of random finite fp16/bf16 values).
template <typename Element>
struct RandomRegisters {
  std::vector<uint32_t> a, b;
  std::vector<float> c;
  RandomRegisters(TestRandom& random, unsigned warps) {
    const std::vector<float> a_values = random_matrix<Element>(random, 32 * warps, 8, 2.0f, false);
    const std::vector<float> b_values = random_matrix<Element>(random, 32 * warps, 4, 2.0f, false);
    for (size_t i = 0; i < a_values.size(); i += 2) {
      a.push_back(pack_bits(ElementCodec<Element>::bits_of(a_values[i]),
                            ElementCodec<Element>::bits_of(a_values[i + 1])));
    }
    for (size_t i = 0; i < b_values.size(); i += 2) {
      b.push_back(pack_bits(ElementCodec<Element>::bits_of(b_values[i]),
                            ElementCodec<Element>::bits_of(b_values[i + 1])));
    }
    c = random.floats(4 * 32 * warps, -4, 4);
  }
};

template <typename Element>
std::vector<float> run_mma(const Launch& launch, const RandomRegisters<Element>& regs) {
  DeviceArray<uint32_t> d_a(regs.a), d_b(regs.b);
  DeviceArray<float> d_c(regs.c), d_d(poisoned<float>(regs.c.size()));
  const RunStatus status =
      run_mma_registers<Element>(launch, d_a.get(), d_b.get(), d_c.get(), d_d.get(), false);
  EXPECT_TRUE(status.ok) << status.message;
  return d_d.to_host();
}

// After a failed launch: an mma runs and gives numbers again.
void expect_runtime_still_works() {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const RandomRegisters<__half> regs(random, 1);
  for (float d : run_mma(one_warp(), regs)) EXPECT_FALSE(std::isnan(d));
}

// --- arithmetic and schedule ------------------------------------------------------------------

template <typename Element>
void check_sequential_float_sums() {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned warps = 4;
  const RandomRegisters<Element> regs(random, warps);
  const std::vector<float> d = run_mma({dim3(2), dim3(64)}, regs);
  for (unsigned w = 0; w < warps; ++w) {
    float a[16][16], b[16][8], c[16][8];
    for (unsigned lane = 0; lane < 32; ++lane) {
      const unsigned t = 32 * w + lane;
      for (unsigned i = 0; i < 8; ++i) {
        const MatrixPlace at = ptx_a_place(lane, i);
        a[at.row][at.col] = ElementCodec<Element>::value_of(
            static_cast<uint16_t>(regs.a[4 * t + i / 2] >> (16 * (i % 2))));
      }
      for (unsigned i = 0; i < 4; ++i) {
        const MatrixPlace at = ptx_b_place(lane, i);
        b[at.row][at.col] = ElementCodec<Element>::value_of(
            static_cast<uint16_t>(regs.b[2 * t + i / 2] >> (16 * (i % 2))));
        const MatrixPlace out = ptx_c_place(lane, i);
        c[out.row][out.col] = regs.c[4 * t + i];
      }
    }
    for (unsigned lane = 0; lane < 32; ++lane) {
      for (unsigned i = 0; i < 4; ++i) {
        const MatrixPlace at = ptx_c_place(lane, i);
        float want = c[at.row][at.col];
        for (unsigned k = 0; k < 16; ++k) {
          const float product = a[at.row][k] * b[k][at.col];  // exact
          want = want + product;
        }
        const float got = d[4 * (32 * w + lane) + i];
        EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0)
            << "warp " << w << " lane " << lane << " d" << i << ": " << got << " vs " << want;
      }
    }
  }
}

TEST(TensorCoreCpu, Fp16WideningIsCudasForEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const float want = __half2float(__ushort_as_half(static_cast<uint16_t>(bits)));
    const float got = simt::detail::TensorElement<__half>::to_float(static_cast<uint16_t>(bits));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "fp16 bits " << bits;
    } else {
      EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0)
          << "fp16 bits " << bits << ": " << got << " vs " << want;
    }
  }
}

TEST(TensorCoreCpu, MmaF16SumsInKOrderInFloat) { check_sequential_float_sums<__half>(); }
TEST(TensorCoreCpu, MmaBf16SumsInKOrderInFloat) { check_sequential_float_sums<__nv_bfloat16>(); }

TEST(TensorCoreCpu, MmaGivesTheSameRegistersUnderAnySchedule) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const RandomRegisters<__nv_bfloat16> regs(random, 4);
  const std::vector<float> in_order = run_mma({dim3(2), dim3(64), 0, 1}, regs);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<float> perturbed = run_mma({dim3(2), dim3(64), 0, 2, seed}, regs);
    EXPECT_EQ(std::memcmp(in_order.data(), perturbed.data(), in_order.size() * sizeof(float)), 0)
        << "perturb seed " << seed;
  }
}

// --- cp.async lands at the wait -------------------------------------------------------------

std::vector<uint32_t> run_async_copy_mode(AsyncCopyMode mode) {
  TestRandom random;
  std::uniform_int_distribution<uint32_t> words(1, 0xfffffffeu);
  std::vector<uint32_t> src(kAsyncCopyWords);
  for (uint32_t& w : src) w = words(random.engine());
  DeviceArray<uint32_t> d_src(src);
  DeviceArray<uint32_t> d_out(poisoned<uint32_t>(3 * kAsyncCopyWords));
  const RunStatus status =
      run_async_copy({dim3(1), dim3(kAsyncCopyThreads), kAsyncCopyWords * sizeof(uint32_t), 1},
                     d_src.get(), d_out.get(), mode);
  EXPECT_TRUE(status.ok) << status.message;
  return d_out.to_host();
}

TEST(AsyncCopyCpu, ReadingBeforeTheWaitSeesTheOldContents) {
  // Every snapshot is read with no wait: all of it is the poison shared memory starts with.
  const std::vector<uint32_t> out = run_async_copy_mode(AsyncCopyMode::no_wait);
  for (unsigned w = 0; w < out.size(); ++w) {
    EXPECT_TRUE(is_poison(out[w])) << "word " << w % kAsyncCopyWords << " of snapshot "
                                   << w / kAsyncCopyWords << " was copied before any wait";
  }
}

TEST(AsyncCopyCpu, WaitGroupOneLeavesTheNewestGroupInFlight) {
  const std::vector<uint32_t> out = run_async_copy_mode(AsyncCopyMode::wait_groups);
  for (unsigned w = kAsyncCopyGroup1Word; w < kAsyncCopyWords; ++w) {
    EXPECT_TRUE(is_poison(out[kAsyncCopyWords + w]))
        << "group 1's word " << w << " landed at wait_group<1>";
    EXPECT_FALSE(is_poison(out[2 * kAsyncCopyWords + w])) << "word " << w << " after wait_group<0>";
  }
}

// --- misuse ------------------------------------------------------------------------------------

TEST(TensorCoreDiagnostics, LaneExitingWhileTheOthersWaitInAnMma) {
  DeviceArray<float> out(poisoned<float>(32));
  const RunStatus status = run_mma_lane_exits(one_warp(), out.get(), 31);
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message,
              AllOf(HasSubstr("thread (31,0,0) of block (0,0,0) (lane 31 of warp 0) exited while "
                              "lanes 0-30 of its warp wait in"),
                    HasSubstr(kMmaF16), HasSubstr(marker_place(kMisuse, "mma lane exits")),
                    HasSubstr("every one of the 32 lanes")))
      << status.message;
  expect_runtime_still_works();
}

TEST(TensorCoreDiagnostics, MmaAfterALaneExited) {
  DeviceArray<float> out(poisoned<float>(32));
  const RunStatus status = run_mma_lane_exits(one_warp(), out.get(), 0);
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message,
              AllOf(HasSubstr("thread (1,0,0) of block (0,0,0) (lane 1 of warp 0) called"),
                    HasSubstr(kMmaF16), HasSubstr(marker_place(kMisuse, "mma lane exits")),
                    HasSubstr("but lane 0 of its warp has exited")))
      << status.message;
  expect_runtime_still_works();
}

TEST(TensorCoreDiagnostics, LaneExitingIsReportedInAnyOrder) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    DeviceArray<float> out(poisoned<float>(32));
    const RunStatus status = run_mma_lane_exits(one_warp(seed), out.get(), 17);
    ASSERT_FALSE(status.ok) << "seed " << seed;
    EXPECT_THAT(status.message, AllOf(HasSubstr("exited"), HasSubstr(kMmaF16),
                                      HasSubstr(marker_place(kMisuse, "mma lane exits"))))
        << "seed " << seed << ": " << status.message;
  }
}

TEST(TensorCoreDiagnostics, LaneAtABarrierInsteadOfTheMmaIsADeadlock) {
  DeviceArray<float> out(poisoned<float>(32));
  const RunStatus status = run_mma_lane_at_barrier(one_warp(), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message, AllOf(HasSubstr("deadlock in block (0,0,0)"),
                                    HasSubstr(std::string("31 thread(s) wait in ") + kMmaF16 +
                                              "(mask 0xffffffff) at"),
                                    HasSubstr(marker_place(kMisuse, "mma without lane 31")),
                                    HasSubstr("1 thread(s) wait in __syncthreads at"),
                                    HasSubstr(marker_place(kMisuse, "lane at barrier"))))
      << status.message;
  expect_runtime_still_works();
}

TEST(TensorCoreDiagnostics, LanesReachingAnMmaFromTwoPlaces) {
  DeviceArray<float> out(poisoned<float>(32));
  const RunStatus status = run_mma_two_places(one_warp(), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(
      status.message,
      AllOf(HasSubstr(std::string("warp lanes reached ") + kMmaF16 + " from two places"),
            HasSubstr("thread (16,0,0)"), HasSubstr(marker_place(kMisuse, "mma high half")),
            HasSubstr("lanes 0-15 wait at"), HasSubstr(marker_place(kMisuse, "mma low half"))))
      << status.message;
  expect_runtime_still_works();
}

TEST(TensorCoreDiagnostics, LdmatrixAmongLanesInAnMma) {
  DeviceArray<float> out(poisoned<float>(32));
  const RunStatus status = run_ldmatrix_during_mma(one_warp(), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message,
              AllOf(HasSubstr("warp lanes disagree on the operation"),
                    HasSubstr("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), HasSubstr(kMmaF16),
                    HasSubstr(marker_place(kMisuse, "ldmatrix among mma")),
                    HasSubstr(marker_place(kMisuse, "mma beside ldmatrix"))))
      << status.message;
  expect_runtime_still_works();
}

TEST(TensorCoreDiagnostics, MmaInAPartialWarp) {
  DeviceArray<float> out(poisoned<float>(48));
  const RunStatus status = run_mma_partial_warp({dim3(1), dim3(48), 0, 1}, out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message, AllOf(HasSubstr("(lane 0 of warp 1) called"), HasSubstr(kMmaF16),
                                    HasSubstr(marker_place(kMisuse, "mma partial warp")),
                                    HasSubstr("its warp has only 16 threads")))
      << status.message;
  expect_runtime_still_works();
}

TEST(TensorCoreDiagnostics, LdmatrixRowNotAligned) {
  DeviceArray<uint32_t> out(poisoned<uint32_t>(32));
  const RunStatus status =
      run_ldmatrix_misaligned({dim3(1), dim3(32), (32 * 8 + 8) * sizeof(uint16_t), 1}, out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message,
              AllOf(HasSubstr("thread (5,0,0) of block (0,0,0)"),
                    HasSubstr("ldmatrix.sync.aligned.m8n8.x4.shared.b16 with the address of row 5 "
                              "of matrix 0"),
                    HasSubstr("not 16-byte aligned"),
                    HasSubstr(marker_place(kMisuse, "ldmatrix misaligned"))))
      << status.message;
  expect_runtime_still_works();
}

TEST(TensorCoreDiagnostics, CpAsyncDestinationNotAligned) {
  DeviceArray<uint32_t> src(std::vector<uint32_t>(4 * 32, 7u));
  DeviceArray<uint32_t> out(poisoned<uint32_t>(32));
  const RunStatus status = run_cp_async_misaligned(
      {dim3(1), dim3(32), 8 * 32 * sizeof(uint32_t), 1}, src.get(), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message,
              AllOf(HasSubstr("thread (3,0,0) of block (0,0,0)"),
                    HasSubstr("cp.async of 16 bytes to"), HasSubstr("not aligned to 16 bytes"),
                    HasSubstr(marker_place(kMisuse, "cp.async misaligned"))))
      << status.message;
}

TEST(TensorCoreDiagnostics, CpAsyncSourceSizeAboveTheCopySize) {
  DeviceArray<uint32_t> src(std::vector<uint32_t>(4 * 32 + 4, 7u));
  DeviceArray<uint32_t> out(poisoned<uint32_t>(32));
  const RunStatus status = run_cp_async_oversized({dim3(1), dim3(32), 4 * 32 * sizeof(uint32_t), 1},
                                                  src.get(), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message, AllOf(HasSubstr("thread (0,0,0) of block (0,0,0)"),
                                    HasSubstr("src-size 20 larger than its cp-size 16"),
                                    HasSubstr(marker_place(kMisuse, "cp.async oversized"))))
      << status.message;
}

TEST(TensorCoreDiagnostics, WmmaLanesPassingDifferentPointers) {
  DeviceArray<__half> a(std::vector<__half>(2 * 16 * 16, __float2half_rn(1.0f)));
  DeviceArray<float> out(poisoned<float>(32));
  const RunStatus status = run_wmma_pointer_disagreement(one_warp(), a.get(), out.get());
  ASSERT_FALSE(status.ok);
  EXPECT_THAT(status.message,
              AllOf(HasSubstr("wmma::load_matrix_sync at"),
                    HasSubstr(marker_place(kMisuse, "wmma pointers disagree")),
                    HasSubstr("in warp 0 of block (0,0,0): lane 0 passed mptr"),
                    HasSubstr("but lane 7 passed"),
                    HasSubstr("every lane of the warp must pass the same mptr, ldm and layout")))
      << status.message;
  for (float v : out.to_host()) EXPECT_TRUE(is_poison(v)) << "a lane got past the failed load";
  expect_runtime_still_works();
}

TEST(TensorCoreDiagnostics, OperationsOutsideALaunchThrow) {
  uint32_t a[4] = {};
  uint32_t b[2] = {};
  float c[4] = {};
  float d[4];
  EXPECT_THROW(ts::tc::mma_m16n8k16_f16(d, a, b, c), std::runtime_error);
  EXPECT_THROW(ts::tc::ldmatrix(a, c), std::runtime_error);
  EXPECT_THROW(ts::tc::cp_async_commit_group(), std::runtime_error);
}

}  // namespace
}  // namespace ts::test
