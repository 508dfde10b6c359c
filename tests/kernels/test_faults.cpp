// Each fault variant shows its own symptom at its own stage, asserted as a property on random
// seeded inputs (the seeds' bugs, as the team that lived them described them).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

AttentionConfig cfg(KernelKind k, Fault f, DType dt, int64_t d, int64_t sq, int64_t skv, bool causal,
                    int64_t splits = 0) {
  AttentionConfig c;
  c.kernel = k;
  c.fault = f;
  c.dtype = dt;
  c.head_dim = d;
  c.batch = 1;
  c.heads = 2;
  c.seq_q = sq;
  c.seq_kv = skv;
  c.causal = causal;
  c.num_splits = splits;
  return c;
}

constexpr double kRight = 2e-5;  // a state this close to the reference is right (fp32 math)
constexpr double kWrong = 1e-2;  // a state this far is wrong

bool has_nan(const std::vector<float>& v, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i)
    if (std::isnan(v[i])) return true;
  return false;
}

// Event errors by stage: the worst of each stage, and whether every event of it was right.
struct StageErrors {
  double worst[kNumStages] = {0, 0, 0, 0};
  int events[kNumStages] = {0, 0, 0, 0};
};
StageErrors errors_by_stage(const test::Run& run) {
  const Reference ref(run.out.config, run.out.tiling, run.inputs);
  StageErrors s;
  for (size_t i = 0; i < run.out.events.size(); ++i) {
    const int st = run.out.events.headers[i].stage;
    s.worst[st] = std::max(s.worst[st], test::event_error(run.out.events, i, ref).max());
    ++s.events[st];
  }
  return s;
}

TEST(Faults, DoubleCountL_PartialsRightReduceWrong) {
  const AttentionConfig c =
      cfg(KernelKind::splitk, Fault::double_count_l, DType::f32, 64, 20, 500, false, 4);
  const test::Run run = test::run_config(c, test::backend_under_test(), 31, true, 2);
  const StageErrors e = errors_by_stage(run);
  EXPECT_EQ(e.events[int(Stage::splitk_partial)], 2 * run.out.tiling.num_q_tiles * 4);
  EXPECT_LE(e.worst[int(Stage::splitk_partial)], kRight) << "every partial matches";
  EXPECT_GE(e.worst[int(Stage::splitk_reduce)], kWrong) << "the reduce does not";
  // Even the first merge is wrong: split 0's O weighted by its l (>> 1 with 128 keys a split).
  const Reference ref(run.out.config, run.out.tiling, run.inputs);
  for (size_t i = 0; i < run.out.events.size(); ++i) {
    const EventHeader& h = run.out.events.headers[i];
    if (h.stage == int32_t(Stage::splitk_reduce) && h.split == 0) {
      const test::EventError err = test::event_error(run.out.events, i, ref);
      EXPECT_LE(err.m, kRight);
      EXPECT_LE(err.l, kRight) << "the sum l itself is right";
      EXPECT_GE(err.o, kWrong) << "O is weighted by l twice";
    }
  }
  const test::RuleCheck rule = test::check_rule(c, run.inputs, run.out, Reference(c, run.out.tiling, run.inputs).output());
  EXPECT_FALSE(rule.passes()) << rule.describe();
}

TEST(Faults, MaskedNan_SplitkNanExactlyWhereASplitIsFullyMasked) {
  // Causal, seq_q = seq_kv = 256, 4 kv tiles in 4 splits: query i sees splits 0..i/64 only.
  AttentionConfig c = cfg(KernelKind::splitk, Fault::masked_nan, DType::bf16, 128, 256, 256, true, 4);
  const test::Run bad = test::run_config(c, test::backend_under_test(), 32, false, 2);
  c.fault = Fault::none;
  const test::Run good = test::run_config(c, test::backend_under_test(), 32, false, 2);
  const Reference::Output ref = Reference(c, good.out.tiling, good.inputs).output();
  const std::vector<double> good_err = test::row_errors(c, good.out.o, ref);
  const std::vector<double> bad_err = test::row_errors(c, bad.out.o, ref);
  for (int64_t bh = 0; bh < 2; ++bh)
    for (int64_t q = 0; q < 256; ++q) {
      const size_t row = size_t(bh * 256 + q);
      // The correct kernel writes a fully masked split as (-inf, 0, 0)...
      for (int s = 0; s < 4; ++s) {
        const size_t p = row * 4 + s;
        const bool masked = s > q / 64;
        EXPECT_EQ(good.out.partial_m[p] == -INFINITY, masked) << "row " << q << " split " << s;
        if (masked) {
          EXPECT_EQ(good.out.partial_l[p], 0.0f);
        }
        // ...the faulty one has NaN there, and only there.
        EXPECT_EQ(std::isnan(bad.out.partial_l[p]), masked) << "row " << q << " split " << s;
        EXPECT_EQ(has_nan(bad.out.partial_o, p * 128, (p + 1) * 128), masked);
      }
      // The NaN reaches the output of every row with a masked split (all but the last 64).
      EXPECT_EQ(std::isinf(bad_err[row]), q < 192) << "row " << q;
      if (q >= 192) {
        EXPECT_LE(bad_err[row], 2 * good_err[row] + 1e-3) << "row " << q;
      }
      EXPECT_FALSE(std::isinf(good_err[row]));
    }
}

TEST(Faults, MaskedNan_Fa1NanForRowsThatSeeNoKey) {
  // Causal with seq_q > seq_kv: query i sees keys j <= i - 60, rows 0..59 see none.
  AttentionConfig c = cfg(KernelKind::fa1, Fault::masked_nan, DType::f16, 64, 100, 40, true);
  const test::Run bad = test::run_config(c, test::backend_under_test(), 33, false, 2);
  c.fault = Fault::none;
  const Reference::Output ref = Reference(c, bad.out.tiling, bad.inputs).output();
  const std::vector<double> err = test::row_errors(c, bad.out.o, ref);
  for (int64_t bh = 0; bh < 2; ++bh)
    for (int64_t q = 0; q < 100; ++q) {
      const size_t row = size_t(bh * 100 + q);
      EXPECT_EQ(std::isinf(err[row]), q < 60) << "row " << q;
      if (q >= 60) {
        EXPECT_LE(err[row], 2e-3) << "row " << q;
      }
      EXPECT_EQ(std::isfinite(bad.out.lse[row]), q >= 60);  // NaN or -inf where no key is seen
    }
}

TEST(Faults, EmptySplit_UnwrittenSplitsPoisonTheReduce) {
  // seq_kv = 100 with head_dim 64 is one kv tile of 128 keys: splits 1..3 are empty.
  const AttentionConfig c = cfg(KernelKind::splitk, Fault::empty_split, DType::f32, 64, 16, 100, false, 4);
  const test::Run run = test::run_config(c, test::backend_under_test(), 34, true, 2);
  const Tiling& t = run.out.tiling;
  ASSERT_EQ(t.num_kv_tiles, 1);
  const Reference ref(c, t, run.inputs);
  for (size_t row = 0; row < size_t(2 * 16); ++row)
    for (int s = 0; s < 4; ++s) {
      const size_t p = row * 4 + s;
      // Split 0 is written; the empty ones keep the launcher's NaN poison.
      EXPECT_EQ(std::isnan(run.out.partial_m[p]), s > 0);
      EXPECT_EQ(std::isnan(run.out.partial_l[p]), s > 0);
      EXPECT_EQ(has_nan(run.out.partial_o, p * 64, (p + 1) * 64), s > 0);
    }
  // No partial event from the empty splits; the reduce is right after split 0, NaN after 1.
  int partials = 0;
  for (size_t i = 0; i < run.out.events.size(); ++i) {
    const EventHeader& h = run.out.events.headers[i];
    if (h.stage == int32_t(Stage::splitk_partial)) {
      ++partials;
      EXPECT_EQ(h.split, 0);
      EXPECT_LE(test::event_error(run.out.events, i, ref).max(), kRight);
    }
    if (h.stage == int32_t(Stage::splitk_reduce)) {
      const double err = test::event_error(run.out.events, i, ref).max();
      if (h.split == 0) {
        EXPECT_LE(err, kRight);
      } else {
        EXPECT_TRUE(std::isinf(err)) << "merged split " << h.split;
      }
    }
  }
  EXPECT_EQ(partials, 2 * t.num_q_tiles) << "split 0 of each head and query tile";
  EXPECT_LT(run.out.events.size(), run.out.events.requested) << "the missing events show";
  // The poison reaches every output row: NaN, not a clean-looking zero.
  for (float x : run.out.lse) EXPECT_TRUE(std::isnan(x));
  for (double x : run.out.o.to_double()) ASSERT_TRUE(std::isnan(x));
}

TEST(Faults, PartialLayout_QueryZeroRightLaterQueriesWrong) {
  const AttentionConfig c = cfg(KernelKind::splitk, Fault::partial_layout, DType::f32, 64, 40, 600, false, 3);
  const test::Run run = test::run_config(c, test::backend_under_test(), 35, true, 2);
  const Reference ref(c, run.out.tiling, run.inputs);
  const StageErrors e = errors_by_stage(run);
  EXPECT_LE(e.worst[int(Stage::splitk_partial)], kRight) << "the writer is right";
  const std::vector<double> err = test::row_errors(c, run.out.o, ref.output());
  for (int64_t bh = 0; bh < 2; ++bh) {
    EXPECT_LE(err[size_t(bh * 40)], 1e-5) << "query 0 of head " << bh << " is right";
    int wrong = 0;
    for (int64_t q = 1; q < 40; ++q) wrong += err[size_t(bh * 40 + q)] > kWrong;
    EXPECT_GE(wrong, 36) << "later queries read other queries' partials";
    EXPECT_GT(err[size_t(bh * 40 + 1)], kWrong) << "the first divergent query is 1";
  }
  // With one split there is no layout to disagree on: right everywhere.
  AttentionConfig one = c;
  one.num_splits = 1;
  const test::Run run1 = test::run_config(one, test::backend_under_test(), 35, false, 2);
  EXPECT_TRUE(test::check_rule(one, run1.inputs, run1.out, Reference(one, run1.out.tiling, run1.inputs).output()).passes());
}

TEST(Faults, PerTileSoftmax_RightForOneTileWrongAfter) {
  const AttentionConfig c = cfg(KernelKind::fa1, Fault::per_tile_softmax, DType::f32, 64, 64, 300, false);
  const test::Run run = test::run_config(c, test::backend_under_test(), 36, true, 2);
  const Reference ref(c, run.out.tiling, run.inputs);
  for (size_t i = 0; i < run.out.events.size(); ++i) {
    const EventHeader& h = run.out.events.headers[i];
    if (h.stage != int32_t(Stage::fa1_step)) continue;
    const test::EventError err = test::event_error(run.out.events, i, ref);
    if (h.step == 0) {
      EXPECT_LE(err.max(), kRight) << "step 0";
    } else {
      EXPECT_GE(err.m, kWrong) << "step " << h.step << ": m is the tile's own max";
    }
  }
  // A single kv tile (seq_kv <= 64) is right end to end.
  AttentionConfig single = c;
  single.seq_kv = 64;
  const test::Run run1 = test::run_config(single, test::backend_under_test(), 36, false, 2);
  EXPECT_TRUE(test::check_rule(single, run1.inputs, run1.out, Reference(single, run1.out.tiling, run1.inputs).output()).passes());
  EXPECT_FALSE(test::check_rule(c, run.inputs, run.out, ref.output()).passes());
}

TEST(Faults, StaleAccumulator_StatsRightOutputLeaksFromPreviousTiles) {
  {
    const AttentionConfig c = cfg(KernelKind::fa1, Fault::stale_accumulator, DType::f32, 32, 64, 250, false);
    const test::Run run = test::run_config(c, test::backend_under_test(), 37, true, 2);
    const Reference ref(c, run.out.tiling, run.inputs);
    for (size_t i = 0; i < run.out.events.size(); ++i) {
      const EventHeader& h = run.out.events.headers[i];
      if (h.stage != int32_t(Stage::fa1_step)) continue;
      const test::EventError err = test::event_error(run.out.events, i, ref);
      EXPECT_LE(std::max(err.m, err.l), kRight) << "step " << h.step << ": m and l are right";
      if (h.step == 0) {
        EXPECT_LE(err.o, kRight);
      } else {
        EXPECT_GE(err.o, kWrong) << "step " << h.step;
      }
    }
  }
  {
    // Split-K: 3 kv tiles in 2 splits (2 + 1): the 2-tile split's O is wrong, the other right.
    const AttentionConfig c = cfg(KernelKind::splitk, Fault::stale_accumulator, DType::f32, 64, 16, 380, false, 2);
    const test::Run run = test::run_config(c, test::backend_under_test(), 38, true, 2);
    const Reference ref(c, run.out.tiling, run.inputs);
    ASSERT_EQ(run.out.tiling.split_kv_tiles(0).size(), 2);
    ASSERT_EQ(run.out.tiling.split_kv_tiles(1).size(), 1);
    for (size_t i = 0; i < run.out.events.size(); ++i) {
      const EventHeader& h = run.out.events.headers[i];
      if (h.stage != int32_t(Stage::splitk_partial)) continue;
      const test::EventError err = test::event_error(run.out.events, i, ref);
      EXPECT_LE(std::max(err.m, err.l), kRight);
      if (h.split == 0) {
        EXPECT_GE(err.o, kWrong);
      } else {
        EXPECT_LE(err.o, kRight);
      }
    }
  }
}

TEST(Faults, MissingBarrier_ResultChangesWithThePerturbationSeed) {
  // The CPU runtime's schedule perturbation; on the GPU the race is compute-sanitizer's to show
  // (racecheck), and MissingBarrier_RunsCleanlyOnTheGpu below only checks the run completes.
  if (!test::testing_cpu()) GTEST_SKIP() << "schedule perturbation is a CPU backend feature";
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    AttentionConfig c = cfg(k, Fault::missing_barrier, DType::f32, 64, 64, 512, false, 2);
    if (k == KernelKind::fa1) c.num_splits = 0;
    const AttentionInputs in = make_random_inputs(c, {.seed = 39});
    auto run = [&](Fault f, std::optional<uint64_t> seed) {
      LaunchRequest req;
      req.config = c;
      req.config.fault = f;
      req.backend = Backend::cpu;
      req.cpu_workers = 1;
      req.perturb_seed = seed;
      return launch_attention(req, in);
    };
    std::set<std::vector<std::byte>> faulty, correct;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      faulty.insert(run(Fault::missing_barrier, seed).o.bytes);
      correct.insert(run(Fault::none, seed).o.bytes);
    }
    EXPECT_GE(faulty.size(), 2u) << to_string(k) << ": the race makes the result depend on the schedule";
    EXPECT_EQ(correct.size(), 1u) << to_string(k) << ": with the barrier every schedule agrees";
    // And it is wrong, not merely different.
    const LaunchOutcome bad = run(Fault::missing_barrier, 1);
    const Reference ref(c, bad.tiling, in);
    EXPECT_GT(test::max_abs_error(bad.o.to_double(), ref.output().o), kWrong);
  }
}

TEST(Faults, MissingBarrier_RunsCleanlyOnTheGpu) {
  if (test::testing_cpu()) GTEST_SKIP() << "GPU only";
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = cfg(k, Fault::missing_barrier, DType::bf16, 128, 64, 4096, true,
                                  k == KernelKind::splitk ? 4 : 0);
    const test::Run run = test::run_config(c, Backend::gpu, 40, true);
    for (double x : run.out.o.to_double()) ASSERT_TRUE(std::isfinite(x));
  }
}

}  // namespace
}  // namespace ts
