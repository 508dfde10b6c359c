// The kernels' one list of instantiations (kernels/kernel_list.cmake) against what the build made
// from it: every (kernel, dtype, head dim) it lists has a kernel for each of the kernel's stages
// and variants in the look-up, and runs correct on the CPU backend against the float64 reference;
// everything else has none and is refused with a message that names the field and what is built.
// base/kernel_list.h (the list as the CLI and the GUI read it) and the look-up, generated apart,
// agree over a wide range of head dims.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <tuple>

#include "base/kernel_list.h"
#include "base/attention_inputs.h"
#include "kernels/kernel_registry.h"
#include "kernels/launch_plan.h"
#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

constexpr KernelVariant kVariants[] = {KernelVariant::plain, KernelVariant::traced, KernelVariant::faulty};
constexpr KernelKind kKinds[] = {KernelKind::fa1, KernelKind::splitk, KernelKind::fa2, KernelKind::splitk2};
// Head dims around and between the listed ones, and far from them.
constexpr int kProbedHeadDims[] = {1, 8, 16, 24, 32, 40, 48, 63, 64, 65, 80, 96, 112, 128, 160, 192, 255, 256, 257, 320, 384, 512};

// The stages a kernel launches, from the plan of a run it is built for (Split-K at two splits: at
// one, its reduce is not launched, LaunchPlan::partial_writes_output).
std::vector<KernelStage> stages_of(KernelKind kernel) {
  AttentionConfig c;
  c.kernel = kernel;
  c.dtype = built_dtypes(kernel).at(0);
  c.head_dim = built_head_dims(kernel).at(0);
  if (splits_kv(kernel)) c.num_splits = 2;
  std::vector<KernelStage> stages;
  for (const PlannedKernel& k : plan_launch(c, kCpuNominalSmCount, TraceRequest{}).kernels) stages.push_back(k.stage);
  return stages;
}

// The look-up of one backend (0 cpu, 1 gpu: its pointers exist without a device).
AttentionKernel find(int backend, KernelStage stage, DType dtype, int head_dim, KernelVariant variant) {
#if defined(TILESCOPE_HAVE_CUDA)
  if (backend == 1) return gpu::find_kernel(stage, dtype, head_dim, variant);
#endif
  (void)backend;
  return cpu::find_kernel(stage, dtype, head_dim, variant);
}
constexpr int kBackends = 1
#if defined(TILESCOPE_HAVE_CUDA)
                          + 1
#endif
    ;

TEST(KernelList, EveryListedBuildRunsCorrectOnTheCpu) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  ASSERT_FALSE(kernel_builds().empty());
  size_t index = 0;
  for (const KernelBuild& b : kernel_builds()) {
    AttentionConfig c;
    c.kernel = b.kernel;
    c.dtype = b.dtype;
    c.head_dim = b.head_dim;
    c.batch = 1;
    c.heads = 2;
    // Off the tiles (64 rows, 32 to 256 keys): partial query and kv tiles; Split-K as a short
    // prefill or a decode step, its splits chosen by the heuristic.
    c.seq_q = b.kernel == KernelKind::splitk ? 1 + static_cast<int64_t>(rng() % 9) : 65 + static_cast<int64_t>(rng() % 20);
    c.seq_kv = 70 + static_cast<int64_t>(rng() % 300);
    c.causal = rng() % 2 == 0;
    SCOPED_TRACE(test::describe(c));
    ASSERT_NO_THROW(validate(c));
    EXPECT_TRUE(is_built(b.kernel, b.dtype, b.head_dim));
    const test::Run run = test::run_config(c, Backend::cpu, test::case_seed(seed, index++), false, 2);
    const ReferenceOutput want = test::reference_of(c, run.inputs);
    const test::RuleCheck rule = test::check_rule(c, run.inputs, run.out, want);
    EXPECT_TRUE(rule.passes()) << rule.describe();
  }
}

// Every listed (stage, dtype, head dim, variant) has a kernel of its own on each backend (a table
// that handed out another dtype's kernel would read the inputs with the wrong element size); the
// Split-K reduce, whose head dim is a run-time value, is one kernel for every listed head dim, and
// the same for every kernel that launches it (splitk, splitk2).
TEST(KernelList, EveryListedBuildHasItsOwnKernel) {
  for (int backend = 0; backend < kBackends; ++backend) {
    SCOPED_TRACE(backend == 0 ? "cpu" : "gpu");
    std::set<AttentionKernel> seen;
    size_t expected = 0;
    for (const KernelBuild& b : kernel_builds())
      for (KernelStage stage : stages_of(b.kernel))
        for (KernelVariant v : kVariants) {
          SCOPED_TRACE(std::string(kernel_stage_name(stage)) + " " + std::string(to_string(b.dtype)) + " " +
                       std::to_string(b.head_dim));
          const AttentionKernel k = find(backend, stage, b.dtype, b.head_dim, v);
          ASSERT_NE(k, nullptr);
          if (stage == KernelStage::splitk_reduce) {
            const int first_dim = built_head_dims(b.kernel).front();
            EXPECT_EQ(k, find(backend, stage, b.dtype, first_dim, v));
            if (b.head_dim != first_dim || seen.count(k)) continue;
          }
          seen.insert(k);
          ++expected;
        }
    EXPECT_EQ(seen.size(), expected);
  }
}

// The traced build of FA-1, FA-2 and the Split-K partial is two kernels (kernels/kernel_registry.h):
// for every listed build, each backend has the recording kernel of those stages, a kernel of its
// own (not the traced entry's, nor another build's), and none for the other stages, whose traced
// build is one kernel. A stage that lost its recording kernel would run only the blocks that
// record nothing.
TEST(KernelList, TheTracedBuildsOfTwoKernelsHaveTheirRecordingKernel) {
  const std::set<KernelStage> two_kernels = {KernelStage::fa1, KernelStage::fa2, KernelStage::splitk_partial};
  for (int backend = 0; backend < kBackends; ++backend) {
    SCOPED_TRACE(backend == 0 ? "cpu" : "gpu");
    std::set<AttentionKernel> seen;
    for (const KernelBuild& b : kernel_builds())
      for (KernelStage stage : stages_of(b.kernel)) {
        SCOPED_TRACE(std::string(kernel_stage_name(stage)) + " " + std::string(to_string(b.dtype)) + " " +
                     std::to_string(b.head_dim));
        AttentionKernel recording = nullptr;
#if defined(TILESCOPE_HAVE_CUDA)
        if (backend == 1) recording = gpu::find_recording_kernel(stage, b.dtype, b.head_dim);
#endif
        if (backend == 0) recording = cpu::find_recording_kernel(stage, b.dtype, b.head_dim);
        if (!two_kernels.count(stage)) {
          EXPECT_EQ(recording, nullptr);
          continue;
        }
        ASSERT_NE(recording, nullptr);
        for (KernelVariant v : kVariants) EXPECT_NE(recording, find(backend, stage, b.dtype, b.head_dim, v));
        EXPECT_TRUE(seen.insert(recording).second) << "the same recording kernel for two builds";
      }
  }
}

// Whether some kernel that launches `stage` is built for the dtype and head dim (a stage several
// kernels launch, the Split-K reduce, is built for the union).
bool stage_built(KernelStage stage, DType dtype, int head_dim) {
  for (KernelKind kernel : kKinds) {
    const std::vector<KernelStage> stages = stages_of(kernel);
    if (std::find(stages.begin(), stages.end(), stage) != stages.end() && is_built(kernel, dtype, head_dim)) return true;
  }
  return false;
}

// Over every kernel, dtype and a wide range of head dims: the look-up has kernels exactly where
// the list says, and the rest is refused before anything runs.
TEST(KernelList, WhatTheListDoesNotHoldIsRefused) {
  size_t refused = 0;
  for (KernelKind kernel : kKinds) {
    const std::vector<KernelStage> stages = stages_of(kernel);
    for (DType dtype : kAllDTypes)
      for (int head_dim : kProbedHeadDims) {
        const bool listed = is_built(kernel, dtype, head_dim);
        SCOPED_TRACE(std::string(to_string(kernel)) + " " + std::string(to_string(dtype)) + " head_dim " +
                     std::to_string(head_dim) + (listed ? " (listed)" : " (not listed)"));
        for (int backend = 0; backend < kBackends; ++backend)
          for (KernelStage stage : stages)
            for (KernelVariant v : kVariants)
              EXPECT_EQ(find(backend, stage, dtype, head_dim, v) != nullptr, stage_built(stage, dtype, head_dim))
                  << kernel_stage_name(stage);
        AttentionConfig c;
        c.kernel = kernel;
        c.dtype = dtype;
        c.head_dim = head_dim;
        c.seq_q = c.seq_kv = 16;
        if (listed) {
          EXPECT_NO_THROW(validate(c));
          continue;
        }
        ++refused;
        try {
          validate(c);
          ADD_FAILURE() << "validate accepted it";
        } catch (const ConfigError& e) {
          const std::string message = e.what();
          const std::vector<int> any_dims = built_head_dims();
          if (std::find(any_dims.begin(), any_dims.end(), head_dim) == any_dims.end()) {
            EXPECT_EQ(e.field(), "head_dim");
            // A choice: every head dim built, the last two joined by "or".
            std::string choices;
            for (size_t i = 0; i < any_dims.size(); ++i)
              choices += (i == 0 ? "" : i + 1 == any_dims.size() ? " or " : ", ") + std::to_string(any_dims[i]);
            EXPECT_NE(message.find("head_dim must be one of " + choices + " (got " + std::to_string(head_dim) + ")"),
                      std::string::npos)
                << message;
          } else {
            // The kernel, the value asked for, and every value the kernel is built for.
            const std::vector<DType> dtypes = built_dtypes(kernel);
            const bool dtype_listed = std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
            EXPECT_EQ(e.field(), dtype_listed ? "head_dim" : "dtype");
            EXPECT_NE(message.find("the " + std::string(to_string(kernel)) + " kernel is built for"), std::string::npos)
                << message;
            const std::string got = dtype_listed ? std::to_string(head_dim) : std::string(to_string(dtype));
            EXPECT_NE(message.find("(got " + got + ")"), std::string::npos) << message;
            if (dtype_listed)
              for (int d : built_head_dims(kernel)) EXPECT_NE(message.find(std::to_string(d)), std::string::npos) << message;
            else
              for (DType d : dtypes) EXPECT_NE(message.find(to_string(d)), std::string::npos) << message;
          }
        }
        // The launcher refuses it too, before anything runs (the inputs' values never matter).
        LaunchRequest req;
        req.config = c;
        req.backend = Backend::cpu;
        AttentionInputs inputs;
        inputs.q = HostTensor::zeros(dtype, {1, 1, c.seq_q, head_dim});
        inputs.k = HostTensor::zeros(dtype, {1, 1, c.seq_kv, head_dim});
        inputs.v = HostTensor::zeros(dtype, {1, 1, c.seq_kv, head_dim});
        EXPECT_THROW(launch_attention(req, inputs), ConfigError);
      }
  }
  EXPECT_GT(refused, 0u);
}

// The choices the CLI and the GUI offer per kernel (its dtypes, its head dims) are the list: their
// product is exactly the kernel's listed builds, and the union over kernels is what any kernel runs.
TEST(KernelList, ChoicesPerKernelAreTheListedBuilds) {
  std::set<std::tuple<KernelKind, DType, int>> listed, offered;
  std::set<DType> any_dtype;
  std::set<int> any_dim;
  for (const KernelBuild& b : kernel_builds()) {
    EXPECT_TRUE(listed.insert({b.kernel, b.dtype, b.head_dim}).second) << "listed twice";
    any_dtype.insert(b.dtype);
    any_dim.insert(b.head_dim);
  }
  for (KernelKind k : built_kernels()) {
    for (DType d : built_dtypes(k))
      for (int h : built_head_dims(k)) offered.insert({k, d, h});
    const std::string label = kernel_choice_label(k);
    EXPECT_EQ(label.rfind(std::string(to_string(k)) + " (", 0), 0u) << label;
    EXPECT_NE(label.find(built_for_text(k)), std::string::npos) << label;
  }
  EXPECT_EQ(offered, listed);
  const std::vector<DType> dtypes = built_dtypes();
  const std::vector<int> dims = built_head_dims();
  EXPECT_EQ(std::set<DType>(dtypes.begin(), dtypes.end()), any_dtype);
  EXPECT_EQ(std::set<int>(dims.begin(), dims.end()), any_dim);
  EXPECT_TRUE(std::is_sorted(dims.begin(), dims.end()));
  EXPECT_EQ(dims.size(), any_dim.size());
}

}  // namespace
}  // namespace ts
