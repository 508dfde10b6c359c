// A/B: two runs of the same problem. Deterministic vs multi-worker CPU schedules agree; a fault
// vs the fixed kernel names where they part; 4 vs 8 splits meet at the final output; two
// schedules of a racy kernel differ (a race); different inputs or problems are refused.
#include <gtest/gtest.h>

#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/index_ranges.h"
#include "kernels/kernel_stages.h"
#include "tests/analysis/launched_run.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::make_config;

RunView launch(const AttentionConfig& c, uint64_t seed, int workers = 1, std::optional<uint64_t> perturb = {}) {
  test::LaunchSpec spec;
  spec.config = c;
  spec.seed = seed;
  spec.cpu_workers = workers;
  spec.perturb_seed = perturb;
  return test::launch_run(spec);
}

TEST(ABCompare, DeterministicAndMultiWorkerSchedulesAgree) {
  TS_SEEDED(seed);
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = make_config(k, Fault::none, DType::bf16, 64, 70, 300, true, 3, 1, 2);
    const ABReport r = compare_runs(launch(c, seed, 1), launch(c, seed, 2));
    EXPECT_EQ(r.verdict, Verdict::clean) << r.symptom.line;
    EXPECT_EQ(r.symptom.kind, "agree");
    EXPECT_TRUE(r.tilings_match);
    EXPECT_TRUE(r.inputs_identical);
    EXPECT_EQ(r.compared_at, "every event");
    EXPECT_EQ(r.compared, r.a.events.size());
    EXPECT_EQ(r.differing, 0u);
    EXPECT_EQ(r.only_in_one, 0u);
    EXPECT_EQ(r.max_o_norm_diff, 0.0) << "the same kernel computes the same bits whatever the schedule";
  }
}

TEST(ABCompare, FaultVsFixedNamesWhereTheyPart) {
  TS_SEEDED(seed);
  AttentionConfig c = make_config(KernelKind::splitk, Fault::partial_layout, DType::f32, 64, 40, 600, false, 3);
  const RunView bad = launch(c, seed, 2);
  c.fault = Fault::none;
  const RunView good = launch(c, seed, 2);
  const ABReport r = compare_runs(bad, good);
  EXPECT_EQ(r.verdict, Verdict::divergence);
  EXPECT_EQ(r.symptom.kind, "runs_differ");
  EXPECT_FALSE(r.same_kernel);
  ASSERT_TRUE(r.first_difference);
  EXPECT_EQ(r.first_difference->where.stage, kSplitkReduceStage);
  EXPECT_EQ(r.first_difference->where.q_begin, 0);
  EXPECT_EQ(r.first_difference->where.split, 0);
  EXPECT_EQ(r.first_difference->query_rows.front(), 1) << "query 0 agrees";
  // The sentence tells the event's rows from the rows that differ (was: "..., queries 0-7, split 0,
  // step 0 (keys 0-199), queries 1-7)", two query ranges side by side; the step now reads "event 0
  // of its block").
  const std::string differ = ", where queries " +
                             format_ranges(std::span<const int64_t>(r.first_difference->query_rows)) + " differ)";
  EXPECT_NE(r.symptom.line.find(differ), std::string::npos) << r.symptom.line;
  // Where A and B part is where A leaves the reference; B is clean.
  EXPECT_EQ(event_key(r.first_difference->where), event_key(r.a.first_divergence.header));
  EXPECT_TRUE(r.b.clean());
  EXPECT_NE(r.symptom.line.find("B matches the reference"), std::string::npos) << r.symptom.line;
  EXPECT_NE(r.symptom.line.find(r.a.symptom.line), std::string::npos);
  // The events where they differ, each once, in the kernel's order, the first difference first
  // (what the viewer steps through).
  ASSERT_EQ(r.differing_events_a.size(), r.differing);
  EXPECT_EQ(r.differing_events_a.front(), r.first_difference->event_a);
  for (size_t k = 1; k < r.differing_events_a.size(); ++k)
    EXPECT_LT(order_key(bad.headers[static_cast<size_t>(r.differing_events_a[k - 1])], bad.stages),
              order_key(bad.headers[static_cast<size_t>(r.differing_events_a[k])], bad.stages));
}

TEST(ABCompare, DifferentSplitCountsMeetAtTheFinalOutput) {
  TS_SEEDED(seed);
  AttentionConfig c = make_config(KernelKind::splitk, Fault::none, DType::f16, 64, 30, 1100, true, 4);
  const RunView four = launch(c, seed, 2);
  c.num_splits = 8;
  const RunView eight = launch(c, seed, 2);
  ABReport r = compare_runs(four, eight);
  EXPECT_FALSE(r.tilings_match);
  EXPECT_EQ(r.compared_at, "the final output");
  EXPECT_EQ(r.compared, 30u) << "every output row";
  EXPECT_EQ(r.differing, 0u);
  EXPECT_EQ(r.verdict, Verdict::clean) << r.symptom.line;

  // FA-1 against Split-K: also only the final output; a faulty one is named.
  AttentionConfig f = c;
  f.kernel = KernelKind::fa1;
  f.num_splits = 0;
  c.fault = Fault::double_count_l;
  const RunView fa1 = launch(f, seed, 2);
  r = compare_runs(fa1, launch(c, seed, 2));
  EXPECT_EQ(r.compared_at, "the final output");
  EXPECT_EQ(r.differing, 30u);
  EXPECT_EQ(r.verdict, Verdict::divergence);
  ASSERT_TRUE(r.first_difference);
  EXPECT_EQ(r.a.stage_table[static_cast<size_t>(r.first_difference->where.stage)].name, kOutputStageName);
  // At the output, A's output events that hold the differing rows.
  ASSERT_FALSE(r.differing_events_a.empty());
  EXPECT_EQ(r.differing_events_a.front(), r.first_difference->event_a);
  for (int64_t e : r.differing_events_a)
    EXPECT_EQ(fa1.stage_of(static_cast<size_t>(e)).name, kOutputStageName);
  EXPECT_NE(r.symptom.line.find("A matches the reference, B does not"), std::string::npos) << r.symptom.line;
}

TEST(ABCompare, TwoSchedulesOfARacyKernelShowARace) {
  TS_SEEDED(seed);
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = make_config(k, Fault::missing_barrier, DType::f32, 64, 64, 512, false, 2);
    const ABReport r = compare_runs(launch(c, seed, 1, 1), launch(c, seed, 1, 2));
    EXPECT_EQ(r.symptom.kind, "race") << to_string(k) << ": " << r.symptom.line;
    // Two schedules cannot tell which barrier is missing: the advice covers a write read too early
    // as well as a tile overwritten too early (this kernel's), never only one of them.
    EXPECT_NE(r.symptom.line.find("before it is read"), std::string::npos) << r.symptom.line;
    EXPECT_NE(r.symptom.line.find("before it is overwritten"), std::string::npos) << r.symptom.line;
    EXPECT_GT(r.differing, 0u);
    EXPECT_EQ(r.verdict, Verdict::divergence);
    // The correct kernel under the same two schedules agrees bit for bit.
    AttentionConfig fixed = c;
    fixed.fault = Fault::none;
    const ABReport ok = compare_runs(launch(fixed, seed, 1, 1), launch(fixed, seed, 1, 2));
    EXPECT_EQ(ok.symptom.kind, "agree") << ok.symptom.line;
    EXPECT_EQ(ok.max_o_norm_diff, 0.0);
  }
}

TEST(ABCompare, NaNInBothRunsAtTheSamePlaceIsNoDifference) {
  TS_SEEDED(seed);
  AttentionConfig c = make_config(KernelKind::splitk, Fault::masked_nan, DType::bf16, 64, 300, 300, true, 3);
  ABReport r = compare_runs(launch(c, seed, 1), launch(c, seed, 2));
  EXPECT_EQ(r.differing, 0u);
  EXPECT_EQ(r.symptom.kind, "both_diverge") << r.symptom.line;
  EXPECT_EQ(r.a.symptom.kind, "nan_fully_masked");
  // At the final output too (2 splits: rows 0-255 see a fully masked split either way), and a NaN
  // on one side only is a difference.
  AttentionConfig more = c;
  more.num_splits = 2;
  r = compare_runs(launch(c, seed, 1), launch(more, seed, 1));
  EXPECT_EQ(r.compared_at, "the final output");
  EXPECT_EQ(r.differing, 0u) << r.symptom.line;
  more.fault = Fault::none;
  r = compare_runs(launch(c, seed, 1), launch(more, seed, 1));
  EXPECT_GT(r.differing, 0u);
  EXPECT_NE(r.symptom.line.find("B matches the reference, A does not"), std::string::npos) << r.symptom.line;
}

TEST(ABCompare, DifferentInputsOrProblemsAreRefused) {
  TS_SEEDED(seed);
  const AttentionConfig c = make_config(KernelKind::fa1, Fault::none, DType::f32, 64, 64, 100, false);
  const ABReport r = compare_runs(launch(c, seed), launch(c, seed + 1));
  EXPECT_FALSE(r.inputs_identical);
  EXPECT_EQ(r.symptom.kind, "inputs_differ");
  // A comparison not made is no divergence.
  EXPECT_EQ(r.verdict, Verdict::not_compared);
  EXPECT_EQ(to_string(r.verdict), "not_compared");
  EXPECT_EQ(r.compared, 0u);
  EXPECT_NE(r.inputs_note.find("q of batch 0 head 0 first differs at [0, 0]"), std::string::npos) << r.inputs_note;

  AttentionConfig other = c;
  other.seq_kv = 101;
  try {
    compare_runs(launch(c, seed), launch(other, seed));
    FAIL() << "expected AnalysisError";
  } catch (const AnalysisError& e) {
    EXPECT_NE(std::string(e.what()).find("seq_kv 100 vs 101"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ts
