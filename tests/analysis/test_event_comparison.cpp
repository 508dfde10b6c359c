// The comparison of one state with its reference (special values, conventions), the per-cell
// view the GUI draws (checked against kernels/reference.h directly), and the tolerance's parsing
// and rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>

#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/naive_baseline.h"
#include "app/model/analysis/state_compare.h"
#include "tests/analysis/launched_run.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

RefState ref_state(bool normalized, std::vector<double> m, std::vector<double> l, std::vector<double> o) {
  RefState s;
  s.normalized = normalized;
  s.rows = static_cast<int32_t>(m.size());
  s.head_dim = static_cast<int32_t>(o.size() / m.size());
  s.m = std::move(m);
  s.l = std::move(l);
  s.o = std::move(o);
  return s;
}

std::vector<RowError> compare(int32_t convention, const std::vector<float>& m, const std::vector<float>& l,
                              const std::vector<float>& o, const RefState& want, double scale = 1.0) {
  std::vector<RowError> out(m.size());
  compare_state({convention, scale, static_cast<int32_t>(m.size()), want.head_dim, m, l, o}, want, out);
  return out;
}

TEST(StateCompare, SpecialValues) {
  const int32_t U = 0;
  // Row 0 sees no key: (-inf, 0, 0) in both is no error. Row 1: ordinary values.
  const RefState want = ref_state(false, {-kInf, 2.0}, {0.0, 4.0}, {0, 0, 8.0, -4.0});
  auto e = compare(U, {-kInfF, 2.0f}, {0.0f, 4.0f}, {0, 0, 8.0f, -4.0f}, want);
  EXPECT_EQ(e[0].m_err, 0.0f);
  EXPECT_EQ(e[0].l_err, 0.0f);
  EXPECT_EQ(e[0].o_norm_err, 0.0f);
  EXPECT_TRUE(e[0].no_key);
  EXPECT_FALSE(e[1].no_key);
  EXPECT_EQ(e[1].o_norm_ref, 2.0f);  // O/l = (2, -1)
  EXPECT_EQ(e[1].o_raw_ref, 8.0f);

  // Errors in each quantity, measured as stated.
  e = compare(U, {-kInfF, 2.5f}, {0.0f, 5.0f}, {0, 0, 8.0f, -4.0f}, want);
  EXPECT_FLOAT_EQ(e[1].m_err, 0.5f);
  EXPECT_FLOAT_EQ(e[1].l_err, 1.0f);
  EXPECT_FLOAT_EQ(e[1].o_norm_err, 2.0f - 8.0f / 5.0f);
  EXPECT_EQ(e[1].o_raw_err, 0.0f);

  // A no-key row with a finite m, a NaN, an infinity where the reference is finite.
  e = compare(U, {0.0f, kNaN}, {0.0f, kInfF}, {0, 0, -kInfF, -4.0f}, want);
  EXPECT_EQ(e[0].m_err, kInfF);
  EXPECT_EQ(e[1].m_err, kInfF);
  EXPECT_EQ(e[1].nan, 1);
  EXPECT_EQ(e[1].pos_inf, 1);
  EXPECT_EQ(e[1].neg_inf, 1);
  EXPECT_FALSE(judge_row(e[1], StageBars{{1e9}, {1e9}, {1e9}, {1e9}}).passes()) << "NaN never passes";
}

TEST(StateCompare, ConventionsAreReconciled) {
  // Trace normalised (LSE, 1, O/l), reference unnormalised: compared as normalised.
  const RefState want = ref_state(false, {1.0}, {std::exp(1.0)}, {3.0 * std::exp(1.0)});
  auto e = compare(kNormalized, {2.0f}, {1.0f}, {3.0f}, want);  // LSE = 1 + log(e) = 2
  EXPECT_LT(e[0].m_err, 1e-6f);
  EXPECT_EQ(e[0].l_err, 0.0f);
  EXPECT_LT(e[0].o_norm_err, 1e-6f);
  EXPECT_LT(e[0].o_raw_err, 1e-6f);
  // A normalised trace's l channel is not read: any value there is no error.
  e = compare(kNormalized, {2.0f}, {123.0f}, {3.0f}, want);
  EXPECT_EQ(e[0].l_err, 0.0f);

  // Base 2: the LSE stored times log2(e) is right; the natural one stored under a base-2 claim
  // is wrong by exactly that factor.
  const float lse2 = static_cast<float>(2.0 * std::numbers::log2e);
  e = compare(kNormalized | kLogBase2, {lse2}, {1.0f}, {3.0f}, want);
  EXPECT_LT(e[0].m_err, 1e-6f);
  e = compare(kNormalized | kLogBase2, {2.0f}, {1.0f}, {3.0f}, want);
  EXPECT_NEAR(e[0].m_err, 2.0 - 2.0 / std::numbers::log2e, 1e-5);

  // An unnormalised max of unscaled scores (flash-attention 2's running max): stored m / scale.
  const double scale = 0.125;
  e = compare(kUnscaledMax, {static_cast<float>(1.0 / scale)}, {static_cast<float>(std::exp(1.0))},
              {static_cast<float>(3.0 * std::exp(1.0))}, want, scale);
  EXPECT_LT(e[0].m_err, 1e-5f);
  EXPECT_LT(e[0].o_raw_err, 1e-5f);
  // Base 2 and unscaled together: m x log2(e) / scale.
  e = compare(kUnscaledMax | kLogBase2, {static_cast<float>(std::numbers::log2e / scale)},
              {static_cast<float>(std::exp(1.0))}, {static_cast<float>(3.0 * std::exp(1.0))}, want, scale);
  EXPECT_LT(e[0].m_err, 1e-5f);

  // An m channel the kernel did not record (kNoMax) is not compared, whatever it holds.
  e = compare(kNormalized | kNoMax, {std::numeric_limits<float>::quiet_NaN()}, {1.0f}, {3.0f}, want);
  EXPECT_EQ(e[0].m_err, 0.0f);
  EXPECT_EQ(e[0].nan, 0);
  EXPECT_LT(e[0].o_norm_err, 1e-6f);
}

TEST(StateCompare, JudgeUsesEachQuantitysBar) {
  RowError e;
  e.m_err = 0.5f;
  e.l_err = 0.2f;
  e.l_ref = 10.0f;
  e.o_raw_err = 3.0f;
  e.o_raw_ref = 100.0f;
  StageBars bars{{1.0, 0, false}, {0, 0.01, false}, {1.0, 0, false}, {0.1, 0.02, true}};
  RowVerdict v = judge_row(e, bars);
  EXPECT_EQ(v.failed, kFailL);  // l: 0.2 > 0.01 * 10
  EXPECT_FLOAT_EQ(v.ratio, 2.0f);
  e.l_err = 0.05f;  // 0.5 x its bar; raw O: 3 <= 0.1 * 10 + 0.02 * 100 = 3
  v = judge_row(e, bars);
  EXPECT_TRUE(v.passes());
  EXPECT_FLOAT_EQ(v.ratio, 1.0f);
}

TEST(Tolerance, ParsesAndRejects) {
  EXPECT_EQ(parse_tolerance("1e-3").atol, 1e-3);
  EXPECT_EQ(parse_tolerance("1e-3").rtol, 0.0);
  const ToleranceOverride t = parse_tolerance("0.5,2e-2");
  EXPECT_EQ(t.atol, 0.5);
  EXPECT_EQ(t.rtol, 2e-2);
  for (const char* bad : {"", "x", "1e-3,", ",1", "-1", "1,2,3", "nan", "inf", "1e999", "1e-3 "})
    EXPECT_THROW(parse_tolerance(bad), ToleranceError) << "'" << bad << "'";
  try {
    parse_tolerance("abc");
  } catch (const ToleranceError& e) {
    EXPECT_NE(std::string(e.what()).find("abc"), std::string::npos) << e.what();
  }
}

TEST(Tolerance, RuleIsTwiceTheNaiveErrorPlusAFloor) {
  NaiveErrors n;
  n.m_f32 = 1e-6;
  n.l_rel_f32 = 2e-6;
  n.o_norm_f32 = 3e-6;
  n.o_dtype = 4e-3;
  n.lse_dtype = 5e-3;
  const Tolerance t = rule_tolerance(n, DType::bf16);
  const double f32 = tolerance_floor(DType::f32), bf16 = tolerance_floor(DType::bf16);
  EXPECT_DOUBLE_EQ(t.intermediate.m.atol, 2e-6 + f32);
  EXPECT_DOUBLE_EQ(t.intermediate.l.rtol, 4e-6 + f32);
  EXPECT_DOUBLE_EQ(t.intermediate.o_norm.atol, 6e-6 + f32);
  EXPECT_DOUBLE_EQ(t.final_stage.o_norm.atol, 8e-3 + bf16);
  EXPECT_DOUBLE_EQ(t.final_stage.m.atol, 1e-2 + bf16);
  EXPECT_GT(bf16, f32);
}

// The input-dtype naive attention overflowed (its fp16 scores passed 65504): its infinite error
// would make an infinite bar that passes any output. The final stage takes the float32
// textbook's bars and the output's rounding to the dtype instead, and the tolerance line says so.
TEST(Tolerance, AnOverflowedInputDtypeBaselineLeavesTheFinalStageFloat32Bars) {
  NaiveErrors n;
  n.m_f32 = 1e-6;
  n.l_rel_f32 = 2e-6;
  n.o_norm_f32 = 3e-6;
  n.o_norm_p_rounded = 5e-6;
  n.o_dtype = std::numeric_limits<double>::infinity();
  n.lse_dtype = std::numeric_limits<double>::infinity();
  const Tolerance t = rule_tolerance(n, DType::f16);
  const double f16 = tolerance_floor(DType::f16);
  EXPECT_TRUE(t.final_from_f32);
  EXPECT_DOUBLE_EQ(t.final_stage.o_norm.atol, 1e-5 + f16);
  EXPECT_DOUBLE_EQ(t.final_stage.o_norm.rtol, unit_roundoff(DType::f16));
  EXPECT_DOUBLE_EQ(t.final_stage.m.atol, 6e-6 + f16);
  EXPECT_NE(t.describe().find("the input-dtype naive attention having overflowed"), std::string::npos) << t.describe();
  // Finite: the input-dtype bars, as before.
  n.o_dtype = 4e-3;
  n.lse_dtype = 5e-3;
  const Tolerance finite = rule_tolerance(n, DType::f16);
  EXPECT_FALSE(finite.final_from_f32);
  EXPECT_DOUBLE_EQ(finite.final_stage.o_norm.atol, 8e-3 + f16);
  EXPECT_DOUBLE_EQ(finite.final_stage.o_norm.rtol, 0.0);
}

// A stage's bars come from the textbook of its formulation (StageInfo::p_rounded, exp2_folded);
// the tolerance line states those of the formulations the run's stages declare.
TEST(Tolerance, EachStageTakesTheBarsOfItsFormulation) {
  NaiveErrors n;
  n.m_f32 = 1e-6;
  n.l_rel_f32 = 2e-6;
  n.o_norm_f32 = 3e-6;
  n.o_norm_p_rounded = 5e-6;
  n.m_folded = 0.5;
  n.l_rel_folded = 0.25;
  n.o_norm_folded = 1.0;
  n.o_norm_folded_p_rounded = 1.5;
  n.o_dtype = 4e-3;
  n.lse_dtype = 5e-3;
  const Tolerance t = rule_tolerance(n, DType::f16, stage_forms({{"fa2.step", StageKind::state, 0, true, true},
                                                                  {"final", StageKind::final, 0, true, true}}));
  EXPECT_TRUE(t.forms.folded_p_rounded);
  EXPECT_FALSE(t.forms.folded || t.forms.p_rounded) << "the final stage declares no formulation";
  const double f32 = tolerance_floor(DType::f32);
  auto expect_bars = [&](const StageInfo& stage, double m, double l_rel, double o_norm) {
    const StageBars& b = t.for_stage(stage);
    EXPECT_DOUBLE_EQ(b.m.atol, 2 * m + f32) << stage.name;
    EXPECT_DOUBLE_EQ(b.l.rtol, 2 * l_rel + f32) << stage.name;
    EXPECT_DOUBLE_EQ(b.o_norm.atol, 2 * o_norm + f32) << stage.name;
    EXPECT_DOUBLE_EQ(b.o_raw.atol, 2 * o_norm + f32) << stage.name;
    EXPECT_DOUBLE_EQ(b.o_raw.rtol, 2 * l_rel + f32) << stage.name;
  };
  expect_bars({"plain", StageKind::state, 0}, 1e-6, 2e-6, 3e-6);
  expect_bars({"rounded", StageKind::state, 0, true}, 1e-6, 2e-6, 5e-6);
  expect_bars({"folded", StageKind::merge, 1, false, true}, 0.5, 0.25, 1.0);
  expect_bars({"both", StageKind::state, 0, true, true}, 0.5, 0.25, 1.5);
  // The output carries the folded stages' O/l error (larger here than the input-dtype textbook's)
  // and its rounding to the dtype.
  const StageBars& fin = t.for_stage({"final", StageKind::final, 0, true, true});
  EXPECT_DOUBLE_EQ(fin.o_norm.atol, 3.0 + tolerance_floor(DType::f16));
  EXPECT_DOUBLE_EQ(fin.o_norm.rtol, unit_roundoff(DType::f16));
  EXPECT_DOUBLE_EQ(fin.m.atol, 1e-2 + tolerance_floor(DType::f16));
  EXPECT_DOUBLE_EQ(rule_tolerance(n, DType::f16).final_stage.o_norm.atol, 8e-3 + tolerance_floor(DType::f16))
      << "no folded stage: the input-dtype textbook's bar";
  const std::string line = t.describe();
  EXPECT_NE(line.find("final vs input-dtype naive, O as the exp2-folded stages' (O 3 + 0.000488 x |O|"), std::string::npos)
      << line;
  EXPECT_NE(line.find("; with exp2 folded and P rounded, O/l 3, m 1, l 0.5 x l"), std::string::npos) << line;
  EXPECT_EQ(line.find("; with P rounded,"), std::string::npos) << line;
}

// A correct kernel on fp16 inputs large enough for the input-dtype naive attention to overflow:
// the final stage is judged (finite bars) and the run is clean under them.
TEST(Tolerance, LargeFp16InputsAreJudgedAtTheFinalStage) {
  TS_SEEDED(seed);
  test::LaunchSpec spec;
  spec.config = test::make_config(KernelKind::splitk, Fault::none, DType::f16, 64, 16, 512, false, 4);
  spec.seed = seed;
  spec.scale = 1000.0;  // scores ~ 1e6 x 8, past fp16's 65504
  const AnalysisReport r = analyze_run(test::launch_run(spec), AnalysisOptions{});
  EXPECT_TRUE(r.tolerance.final_from_f32);
  EXPECT_TRUE(std::isfinite(r.tolerance.final_stage.o_norm.atol) && std::isfinite(r.tolerance.final_stage.m.atol));
  EXPECT_TRUE(r.clean()) << r.symptom.line;
}

// The reference makes the naive baselines' keys of a kv head when its row blocks ask for them
// and keeps only a few: on a GQA decode run with more kv heads than it keeps, asked in an order
// that makes it drop and make them again, every row block's baseline errors are those of the
// keys converted all at once (pair_floats), and so is the tolerance made from them.
TEST(RunReference, NaiveKeysMadeOnUseGiveTheBaselinesOfKeysMadeAtOnce) {
  TS_SEEDED(seed);
  test::LaunchSpec spec;
  spec.config = test::make_config(KernelKind::splitk, Fault::none, DType::bf16, 64, 1, 700, false, 4, 3, 8);
  spec.config.heads_kv = 4;  // 12 kv pairs, more than kNaiveKeysKept
  spec.seed = seed;
  const RunView run = test::launch_run(spec);
  ASSERT_GT(run.inputs.kv_pairs.size(), kNaiveKeysKept);
  const std::vector<PairFloats> at_once = pair_floats(run.attention, run.inputs);
  const RunReference ref(run);
  std::vector<RowBlock> order = ref.row_blocks();
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  order.insert(order.end(), order.begin(), order.end());  // each asked twice
  for (const RowBlock& rb : order) {
    const auto block = ref.block(rb);
    const PairFloats* f = nullptr;
    for (const PairFloats& p : at_once)
      if (p.batch == rb.batch && p.head == rb.head) f = &p;
    ASSERT_NE(f, nullptr);
    const NaiveErrors want = naive_row_block_errors(run.attention, *f, *block);
    const NaiveErrors got = ref.naive_errors(*block);
    EXPECT_GT(want.o_dtype, 0.0);  // bf16 inputs: the textbook in bf16 is off the reference
    EXPECT_EQ(got.m_f32, want.m_f32);
    EXPECT_EQ(got.l_rel_f32, want.l_rel_f32);
    EXPECT_EQ(got.o_norm_f32, want.o_norm_f32);
    EXPECT_EQ(got.o_dtype, want.o_dtype);
    EXPECT_EQ(got.lse_dtype, want.lse_dtype);
  }
}

// compare_event against kernels/reference.h used directly (a row block reference of the event's
// own rows and keys), on a faulty and a correct run.
TEST(CompareEvent, ArraysAgreeWithTheReferenceAndTheTrace) {
  TS_SEEDED(seed);
  for (Fault fault : {Fault::double_count_l, Fault::none}) {
    test::LaunchSpec spec;
    spec.config = test::make_config(KernelKind::splitk, fault, DType::f32, 64, 20, 500, true, 3, 1, 2);
    spec.seed = seed;
    const RunView run = test::launch_run(spec);
    RunReference ref(run);
    ASSERT_GT(run.num_events(), 0u);
    for (size_t i = 0; i < run.num_events(); ++i) {
      const EventComparison c = compare_event(run, ref, i);
      const RunEvent ev = run.event(i);
      const StageInfo& stage = run.stage_of(i);
      const auto block = compute_row_block(run.attention, run.inputs, row_block(ev.header), {});
      const std::vector<KeyRange> keys = event_key_ranges(ev.header, stage, run.attention);
      const RefState want = stage.kind == StageKind::final ? block->output() : block->state(keys);
      ASSERT_EQ(c.rows, ev.header.rows);
      ASSERT_EQ(c.compared_normalized, want.normalized);
      const size_t d = static_cast<size_t>(c.head_dim);
      const StageBars& bars = ref.tolerance().for_stage(stage);
      for (size_t r = 0; r < static_cast<size_t>(c.rows); ++r) {
        EXPECT_EQ(c.m_trace[r], ev.m[r]);
        EXPECT_FLOAT_EQ(c.m_reference[r], static_cast<float>(want.m[r]));
        EXPECT_FLOAT_EQ(c.l_reference[r], static_cast<float>(want.l[r]));
        const double l = !want.normalized ? want.l[r] : 1.0;
        const double tl = !want.normalized ? ev.l[r] : 1.0;
        for (size_t col = 0; col < d; ++col) {
          const size_t at = r * d + col;
          EXPECT_EQ(c.o_trace.values[at], ev.o[at]);
          // The reference here is cut into other pieces than the run's (its own boundaries):
          // float64 sums in another order, equal to ~1e-15 relative.
          const double close = 1e-12 * (1.0 + std::fabs(want.o[at]));
          EXPECT_NEAR(c.o_reference.values[at], static_cast<float>(want.o[at]), close + 1e-7 * std::fabs(want.o[at]));
          EXPECT_NEAR(c.o_diff.values[at], double(ev.o[at]) - want.o[at], close + 1e-7 * std::fabs(c.o_diff.values[at]));
          EXPECT_NEAR(c.o_norm_reference.values[at], l > 0 ? want.o[at] / l : 0.0, 1e-6 * (1 + std::fabs(want.o[at])));
          EXPECT_NEAR(c.o_norm_trace.values[at], tl > 0 ? ev.o[at] / tl : 0.0, 1e-6);
          // A cell fails when its raw O or O/l error is over the row's bar.
          const RowError& e = c.row_errors[r];
          const bool raw_bad = std::fabs(double(ev.o[at]) - want.o[at]) > bars.o_raw.bar(e.o_raw_ref, e.l_ref);
          const double norm_err = std::fabs((tl > 0 ? ev.o[at] / tl : 0.0) - (l > 0 ? want.o[at] / l : 0.0));
          const bool norm_bad = norm_err > bars.o_norm.bar(e.o_norm_ref, e.l_ref) * (1 + 1e-6);
          if (raw_bad || norm_bad) {
            EXPECT_TRUE(c.cell_fails[at]) << "event " << i << " row " << r << " col " << col;
          }
          if (fault == Fault::none) {
            EXPECT_FALSE(c.cell_fails[at]);
          }
        }
      }
      // double_count_l: the tiles and partials are right, the reduce and what follows wrong.
      EXPECT_EQ(c.passes, fault == Fault::none || stage.kind == StageKind::state) << "event " << i << " " << stage.name;
      if (!c.passes) {
        EXPECT_EQ(c.failing_rows().size(), static_cast<size_t>(c.rows));
        EXPECT_FALSE(c.failing_columns().empty());
      }
    }
  }
  EXPECT_THROW(compare_event(test::launch_run({}), RunReference(test::launch_run({})), 1u << 20), std::out_of_range);
}

}  // namespace
}  // namespace ts
