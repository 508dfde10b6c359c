// The diagnosis against bugs it was not written for: 29 fault variants of our own test kernels
// (fault_kernels/: a one-pass FA-1-style kernel and a Split-K partial + merge, written as a user
// writes a kernel, none of them one of the eight built-in faults), each over several configs (odd
// sizes, causal, Sq != Skv, fp32 / fp16 / bf16, batch and heads > 1, GQA, softcap, ALiBi), on fresh random
// inputs. For each: the first divergence is where the bug first acts (worked out here from the
// kernel's tiling, independently of the analysis); where it goes wrong, as sets, is what the bug
// touches; and the symptom names the bug's mechanism or no mechanism — never another one.
// Also: the correct test kernels are clean in every config, and the report carries the
// mechanism, the failing sets, the worst cell and non-finite rows in text and JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/report_json.h"
#include "app/model/analysis/report_text.h"
#include "tests/analysis/fault_kernels/fault_kernel_run.h"
#include "tests/support/test_seed.h"

namespace ts::test {
namespace {

using K = SymptomKind;
using TF = TestFault;

FaultKernelRun make_run(TF fault, DType dtype, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seq_q, int64_t seq_kv,
                        int64_t head_dim, CausalAlign causal, int splits = 2, double softcap = 0.0) {
  FaultKernelRun r;
  r.fault = fault;
  for (const TestFaultInfo& i : kTestFaults)
    if (i.fault == fault) r.shape = i.shape;
  r.attention.batch = batch;
  r.attention.heads_q = heads_q;
  r.attention.heads_kv = heads_kv;
  r.attention.seq_q = seq_q;
  r.attention.seq_kv = seq_kv;
  r.attention.head_dim = head_dim;
  r.attention.dtype = dtype;
  r.attention.causal = causal;
  r.attention.softcap = softcap;
  r.splits = splits;
  return r;
}

// Where a bug first acts: a stage of the test kernels' tables, (batch, head, first query row of
// the block), the split (-1: none) and the step (-1: not checked; min_step: at least).
struct Place {
  std::string stage;
  int32_t batch = 0, head = 0, q_begin = 0;
  int32_t split = -1;
  int32_t step = -1;
  int32_t min_step = -1;
  bool any_rows = false;  // which (batch, head, query tile) depends on the inputs: not checked
};

struct FaultCase {
  std::string name;
  FaultKernelRun run;
};
void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

int64_t offset_of(const FaultKernelRun& r) {
  return r.attention.causal == CausalAlign::bottom_right ? r.attention.seq_kv - r.attention.seq_q : 0;
}

// The first query tile (batch 0, head 0) with a row whose key `key(row)` lies in [lo, hi) and is
// a real key, and the kv tile (from `tile0`) of the smallest such key.
std::optional<std::pair<int32_t, int32_t>> first_tile_with_key(const FaultKernelRun& r, const std::function<int64_t(int64_t)>& key,
                                                                int64_t lo, int64_t hi, int64_t tile_origin) {
  const int64_t sq = r.attention.seq_q;
  for (int64_t q0 = 0; q0 < sq; q0 += r.block_m) {
    int64_t best = -1;
    for (int64_t row = q0; row < std::min(sq, q0 + r.block_m); ++row) {
      const int64_t k = key(row);
      if (k >= lo && k < hi && (best < 0 || k < best)) best = k;
    }
    if (best >= 0) return std::make_pair(static_cast<int32_t>(q0), static_cast<int32_t>((best - tile_origin) / r.block_n));
  }
  return std::nullopt;
}

// What each variant must produce: its first divergence, the mechanisms it may be named by, whether
// the engine must name one (the mechanism is identifiable in this config), and its own checks.
struct Expectation {
  Place place;
  std::set<SymptomKind> mechanisms;
  bool must_name = true;
  std::function<void(const AnalysisReport&)> check;
};

const StageReport& stage_named(const AnalysisReport& r, const std::string& name) {
  for (const StageReport& s : r.stages)
    if (s.info.name == name) return s;
  ADD_FAILURE() << "no stage " << name;
  return r.stages.front();
}

const Finding* finding(const AnalysisReport& r, const std::string& id) {
  for (const Finding& f : r.symptom.findings)
    if (f.id == id) return &f;
  return nullptr;
}

double number(const Mechanism& m, const std::string& key) {
  const auto it = m.numbers.find(key);
  return it == m.numbers.end() ? std::nan("") : it->second;
}

// Query `query` holds m = -inf, l = 0 where the reference sees exactly key `key`: the report's
// non-finite rows and the measured finding say it in those words.
void expect_no_key_state(const AnalysisReport& rep, int64_t query, int64_t key) {
  bool listed = false;
  for (const NonFiniteRow& n : rep.non_finite_rows)
    if (n.query == query && n.holds_no_key_state) {
      listed = true;
      EXPECT_EQ(n.reference_keys, 1);
      EXPECT_EQ(n.reference_span.begin, key);
      EXPECT_EQ(n.neg_inf, 1u) << "only m is -inf";
      EXPECT_EQ(n.nan, 0u);
    }
  EXPECT_TRUE(listed) << "query " << query << " not listed as holding the no-key state";
  const Finding* f = finding(rep, "non_finite");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->text.find("query " + std::to_string(query) + " holds the no-key state (m = -inf, l = 0)"), std::string::npos)
      << f->text;
  EXPECT_NE(f->text.find("the reference sees key " + std::to_string(key)), std::string::npos) << f->text;
}

Expectation expect(const FaultKernelRun& r) {
  const AttentionSpec& a = r.attention;
  const int last_tile = num_kv_tiles(r) - 1;
  const double scale = a.effective_scale();
  Expectation e;
  switch (r.fault) {
    case TF::tail_admits_padded_key:
      e.place = {"my_fa1.step", 0, 0, 0, -1, last_tile};
      e.mechanisms = {K::key_set_changed};
      e.check = [&r](const AnalysisReport& rep) {
        if (rep.symptom.mechanism) {
          EXPECT_EQ(number(*rep.symptom.mechanism, "zero_keys"), 1.0);
        }
        // Only the events over the last kv tile go wrong by themselves.
        const StageReport& s = stage_named(rep, "my_fa1.step");
        EXPECT_EQ(s.failing.key_ends.failing, std::vector<int64_t>{r.attention.seq_kv});
      };
      break;
    case TF::causal_drops_diagonal: {
      const int64_t off = offset_of(r);
      const auto at = first_tile_with_key(r, [off](int64_t row) { return row + off; }, 0, a.seq_kv, 0);
      e.place = {"my_fa1.step", 0, 0, at->first, -1, at->second};
      e.mechanisms = {K::key_set_changed};
      e.check = [off](const AnalysisReport& rep) {
        if (rep.symptom.mechanism) {
          EXPECT_EQ(number(*rep.symptom.mechanism, "delta_keys"), -1.0);
        }
        if (off != 0) return;
        // Query 0 sees only key 0: without it the row holds the no-key state, and says so.
        expect_no_key_state(rep, 0, 0);
      };
      break;
    }
    case TF::causal_admits_next_key: {
      const int64_t off = offset_of(r);
      const auto at = first_tile_with_key(r, [off](int64_t row) { return row + off + 1; }, 0, a.seq_kv, 0);
      e.place = {"my_fa1.step", 0, 0, at->first, -1, at->second};
      e.mechanisms = {K::key_set_changed};
      e.check = [](const AnalysisReport& rep) {
        if (rep.symptom.mechanism) {
          EXPECT_EQ(number(*rep.symptom.mechanism, "delta_keys"), 1.0);
        }
      };
      break;
    }
    case TF::scale_applied_twice:
      e.place = {"my_fa1.step", 0, 0, 0, -1, 0};
      e.mechanisms = {K::scores_scaled};
      e.check = [scale](const AnalysisReport& rep) {
        if (rep.symptom.mechanism) {
          EXPECT_NEAR(number(*rep.symptom.mechanism, "factor"), scale, 1e-9);
        }
        // The measured ratio of m to the reference: the scale, said as a number.
        const Finding* f = finding(rep, "constant_ratio");
        ASSERT_NE(f, nullptr) << rep.symptom.line;
        EXPECT_NEAR(f->numbers.at("ratio"), scale, 1e-4 * scale);
        EXPECT_NE(f->text.find("the softmax scale"), std::string::npos) << f->text;
        // The output, rounded to fp16 / bf16 from values far from the reference's, follows from
        // the steps: it does not go wrong by itself.
        EXPECT_NE(rep.symptom.line.find("my_fa1.out is wrong only through it"), std::string::npos) << rep.symptom.line;
      };
      break;
    case TF::o_not_rescaled:
    case TF::l_not_rescaled:
    case TF::rescale_inverted:
      e.place = {"my_fa1.step", 0, 0, 0, -1, -1, 1};
      if (r.fault == TF::o_not_rescaled) e.mechanisms = {K::o_not_rescaled};
      if (r.fault == TF::l_not_rescaled) e.mechanisms = {K::l_not_rescaled};
      e.must_name = r.fault != TF::rescale_inverted;
      e.check = [](const AnalysisReport& rep) {
        // The wrong rows are rows whose running max rose at their step.
        const Finding* f = finding(rep, "rows_max_rose");
        ASSERT_NE(f, nullptr) << rep.symptom.line;
        EXPECT_EQ(f->numbers.at("all_wrong_rose"), 1.0);
      };
      break;
    case TF::lse_in_log2:
      e.place = {"my_fa1.out", 0, 0, 0};
      e.mechanisms = {K::m_channel_units};
      e.check = [](const AnalysisReport& rep) {
        if (rep.symptom.mechanism) {
          EXPECT_NEAR(number(*rep.symptom.mechanism, "factor"), std::numbers::log2e, 1e-12);
        }
        const Finding* f = finding(rep, "constant_ratio");
        ASSERT_NE(f, nullptr) << rep.symptom.line;
        EXPECT_NEAR(f->numbers.at("ratio"), std::numbers::log2e, 1e-4);
        EXPECT_NE(f->text.find("log2 e"), std::string::npos);
        EXPECT_TRUE(stage_named(rep, "my_fa1.step").clean());
      };
      break;
    case TF::lse_without_log_l:
      e.place = {"my_fa1.out", 0, 0, 0};
      e.mechanisms = {K::lse_without_log_l};
      e.check = [](const AnalysisReport& rep) {
        const StageReport& s = stage_named(rep, "my_fa1.out");
        EXPECT_EQ(s.failing.quantities & (kFailONorm | kFailORaw), 0) << "O is right";
      };
      break;
    case TF::batch_stride_without_heads:
      e.place = {"my_fa1.step", 1, 0, 0, -1, 0};
      e.mechanisms = {K::wrong_kv_input};
      e.check = [&r](const AnalysisReport& rep) {
        // Batch 0 entirely right, batch 1 entirely wrong: every head, every query.
        const FailingSets& f = stage_named(rep, "my_fa1.step").failing;
        EXPECT_EQ(f.batches.failing, std::vector<int64_t>{1});
        EXPECT_TRUE(f.heads.all());
        EXPECT_TRUE(f.query_rows.all());
        EXPECT_NE(failing_sets_text(f).find("batch 1 only (of 0-1), all heads"), std::string::npos) << failing_sets_text(f);
        (void)r;
      };
      break;
    case TF::gqa_modulo_head_map:
      e.place = {"my_fa1.step", 0, 1, 0, -1, 0};
      e.mechanisms = {K::wrong_kv_input};
      e.check = [](const AnalysisReport& rep) {
        const FailingSets& f = stage_named(rep, "my_fa1.step").failing;
        EXPECT_EQ(f.heads.failing, (std::vector<int64_t>{1, 2}));
        EXPECT_TRUE(f.batches.all());
      };
      break;
    case TF::exp2_on_natural_scores:
      e.place = {"my_fa1.step", 0, 0, 0, -1, 0};
      e.mechanisms = {K::exponent_base};
      e.check = [](const AnalysisReport& rep) {
        if (rep.symptom.mechanism) {
          EXPECT_NEAR(number(*rep.symptom.mechanism, "exponent_factor"), std::numbers::ln2, 1e-12);
        }
        EXPECT_EQ(stage_named(rep, "my_fa1.step").m.failing_rows, 0u) << "m is right";
      };
      break;
    case TF::softcap_not_applied:
      e.place = {"my_fa1.step", 0, 0, 0, -1, 0};
      e.mechanisms = {K::softcap_ignored};
      break;
    case TF::alibi_not_applied:
      e.place = {"my_fa1.step", 0, 0, 0, -1, 0};
      e.mechanisms = {K::alibi_ignored};
      break;
    case TF::output_divided_twice:
      e.place = {"my_fa1.out", 0, 0, 0};
      e.mechanisms = {K::o_divided_by_l};
      e.check = [](const AnalysisReport& rep) {
        EXPECT_TRUE(stage_named(rep, "my_fa1.step").clean());
        EXPECT_EQ(stage_named(rep, "my_fa1.out").failing.quantities & kFailM, 0) << "the LSE is right";
        EXPECT_NE(rep.symptom.line.find("divided by l twice"), std::string::npos) << rep.symptom.line;
        // Every row of an output sees its causal diagonal: saying so of the wrong rows tells nothing.
        EXPECT_EQ(finding(rep, "diagonal_rows"), nullptr) << rep.symptom.line;
      };
      break;
    case TF::causal_top_left:
      e.place = {"my_fa1.step", 0, 0, 0, -1, 0};
      e.mechanisms = {K::causal_alignment};
      if (offset_of(r) <= 2) e.mechanisms.insert(K::key_set_changed);  // then the same keys as a shifted diagonal
      break;
    case TF::v_tile_lags:
      e.place = {"my_fa1.step", 0, 0, 0, -1, 1};
      e.must_name = false;
      e.check = [](const AnalysisReport& rep) {
        EXPECT_EQ(stage_named(rep, "my_fa1.step").failing.quantities & (kFailM | kFailL), 0) << "m and l are right";
      };
      break;
    case TF::m_starts_at_zero:
      // Rows whose first scores are all below 0 hold m = 0: the same softmax, another max. Under
      // a causal mask the first rows see one key, two keys...: some row of some head shows it.
      // "m is exactly 0 in every wrong row" takes two rows: one row's value is no evidence of a
      // constant (with some seeds a single row goes wrong).
      e.place = {"my_fa1.step", 0, 0, 0, -1, 0};
      e.place.any_rows = true;
      e.must_name = false;
      e.check = [](const AnalysisReport& rep) {
        ASSERT_NE(finding(rep, "equivalent_state"), nullptr) << rep.symptom.line;
        const Finding* value = finding(rep, "constant_value");
        const Finding* state = finding(rep, "equivalent_state");
        if (state->numbers.at("rows") < 2) {
          EXPECT_EQ(value, nullptr) << "a constant claimed from one row: " << rep.symptom.line;
          return;
        }
        ASSERT_NE(value, nullptr) << "m = 0 in every wrong row, said as such";
        EXPECT_EQ(value->numbers.at("value"), 0.0);
        EXPECT_TRUE(stage_named(rep, "my_fa1.out").clean()) << "the output does not see it";
      };
      break;
    case TF::pv_added_twice:
      e.place = {"my_fa1.step", 0, 0, 0, -1, 0};
      e.must_name = false;
      e.check = [](const AnalysisReport& rep) {
        EXPECT_EQ(stage_named(rep, "my_fa1.step").failing.quantities & (kFailM | kFailL), 0) << "m and l are right";
      };
      break;
    case TF::last_split_drops_diagonal: {
      const int last = r.splits - 1;
      const auto [b, en] = split_keys(r, last);
      const int64_t off = offset_of(r);
      const auto at = first_tile_with_key(r, [off](int64_t row) { return row + off; }, b, en, b);
      e.place = {"my_split.tile", 0, 0, at->first, last, at->second};
      e.mechanisms = {K::key_set_changed};
      e.check = [last](const AnalysisReport& rep) {
        if (!rep.symptom.mechanism) return;
        const Mechanism& m = *rep.symptom.mechanism;
        EXPECT_EQ(number(m, "delta_keys"), -1.0);
        // Acting in the last split only (said as a scope unless no other split holds a diagonal).
        if (m.scope.find("only") != std::string::npos) {
          EXPECT_NE(m.scope.find("split " + std::to_string(last) + " "), std::string::npos) << m.scope;
        }
        const FailingSets& f = stage_named(rep, "my_split.tile").failing;
        EXPECT_EQ(f.splits.failing, std::vector<int64_t>{last});
      };
      if (a.seq_q == a.seq_kv && r.splits == 2) {
        // Query b (b: the last split's first key) sees only key b there: the no-key state.
        const int64_t first = b;
        e.check = [check = e.check, first](const AnalysisReport& rep) {
          check(rep);
          expect_no_key_state(rep, first, first);
        };
      }
      break;
    }
    case TF::splits_shifted_one_key:
      e.place = {"my_split.tile", 0, 0, 0, 1, 0};
      e.mechanisms = {K::key_set_changed};
      e.check = [&r](const AnalysisReport& rep) {
        if (rep.symptom.mechanism) {
          EXPECT_EQ(number(*rep.symptom.mechanism, "delta_keys"), -1.0);
        }
        const FailingSets& f = stage_named(rep, "my_split.tile").failing;
        EXPECT_EQ(f.splits.failing.front(), 1) << "split 0 is right";
        (void)r;
      };
      break;
    case TF::partial_o_half_columns:
      e.place = {"my_split.merge", 0, 0, 0, 0, 0};
      e.must_name = false;
      e.check = [&r](const AnalysisReport& rep) {
        const FailingSets& f = stage_named(rep, "my_split.merge").failing;
        std::vector<int64_t> upper;
        for (int64_t c = r.attention.head_dim / 2; c < r.attention.head_dim; ++c) upper.push_back(c);
        EXPECT_EQ(f.columns.failing, upper) << "only the columns never written";
        EXPECT_TRUE(stage_named(rep, "my_split.partial").clean());
      };
      break;
    case TF::partial_m_in_log2:
      e.place = {"my_split.partial", 0, 0, 0, 0};
      e.mechanisms = {K::m_channel_units};
      e.check = [](const AnalysisReport& rep) {
        if (rep.symptom.mechanism) {
          EXPECT_NEAR(number(*rep.symptom.mechanism, "factor"), std::numbers::log2e, 1e-12);
        }
        EXPECT_TRUE(stage_named(rep, "my_split.tile").clean());
      };
      break;
    case TF::partial_o_normalized:
      e.place = {"my_split.partial", 0, 0, 0, 0};
      e.mechanisms = {K::o_divided_by_l};
      break;
    case TF::merge_o_not_rescaled:
      e.place = {"my_split.merge", 0, 0, 0, -1, -1, 1};
      e.mechanisms = {K::o_not_rescaled};
      break;
    case TF::merge_skips_last_split:
      e.place = {"my_split.merge", 0, 0, 0, r.splits - 1, r.splits - 1};
      e.mechanisms = {K::step_not_added};
      break;
    case TF::merge_reads_next_query:
      e.place = {"my_split.merge", 0, 0, 0, 0, 0};
      e.mechanisms = {K::query_layout};
      e.check = [](const AnalysisReport& rep) {
        if (rep.symptom.mechanism) {
          EXPECT_EQ(number(*rep.symptom.mechanism, "query_delta"), 1.0);
        }
      };
      break;
    case TF::merge_l_not_rescaled:
      e.place = {"my_split.merge", 0, 0, 0, -1, -1, 1};
      e.mechanisms = {K::l_not_rescaled};
      break;
    case TF::merge_weights_swapped:
      e.place = {"my_split.merge", 0, 0, 0, 0, 0};  // O = w O + 0 O_0 = 0 after the first split
      e.must_name = false;
      break;
    case TF::none: break;
  }
  return e;
}

std::vector<FaultCase> fault_cases() {
  const auto f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  const auto none = CausalAlign::none, br = CausalAlign::bottom_right, tl = CausalAlign::top_left;
  std::vector<FaultCase> c = {
      {"tail_padded_fp32", make_run(TF::tail_admits_padded_key, f32, 1, 1, 1, 40, 100, 32, none)},
      {"tail_padded_bf16_b2h2", make_run(TF::tail_admits_padded_key, bf16, 2, 2, 2, 33, 77, 64, none)},
      {"tail_padded_fp16_decode", make_run(TF::tail_admits_padded_key, f16, 1, 2, 1, 1, 50, 128, none)},
      {"drop_diag_fp32_square", make_run(TF::causal_drops_diagonal, f32, 1, 1, 1, 64, 64, 32, br)},  // query 0: no key
      {"drop_diag_bf16_sq_lt_skv", make_run(TF::causal_drops_diagonal, bf16, 2, 2, 1, 40, 100, 64, br)},
      {"drop_diag_fp16_top_left", make_run(TF::causal_drops_diagonal, f16, 1, 1, 1, 50, 70, 32, tl)},
      {"next_key_fp32", make_run(TF::causal_admits_next_key, f32, 1, 2, 2, 57, 57, 64, br)},
      {"next_key_bf16_sq_gt_skv", make_run(TF::causal_admits_next_key, bf16, 1, 1, 1, 70, 45, 32, br)},
      {"next_key_fp16_odd", make_run(TF::causal_admits_next_key, f16, 2, 1, 1, 33, 90, 128, br)},
      {"scale_twice_fp32", make_run(TF::scale_applied_twice, f32, 1, 1, 1, 40, 100, 64, none)},
      {"scale_twice_bf16_causal", make_run(TF::scale_applied_twice, bf16, 2, 2, 2, 31, 65, 32, br)},
      {"scale_twice_fp16_d128", make_run(TF::scale_applied_twice, f16, 1, 1, 1, 17, 40, 128, none)},
      {"o_not_rescaled_fp32", make_run(TF::o_not_rescaled, f32, 1, 2, 2, 40, 200, 32, none)},
      {"o_not_rescaled_bf16_causal", make_run(TF::o_not_rescaled, bf16, 2, 1, 1, 50, 130, 64, br)},
      {"o_not_rescaled_fp16", make_run(TF::o_not_rescaled, f16, 1, 1, 1, 23, 97, 128, none)},
      {"l_not_rescaled_fp32", make_run(TF::l_not_rescaled, f32, 1, 1, 1, 40, 200, 64, none)},
      {"l_not_rescaled_bf16_causal", make_run(TF::l_not_rescaled, bf16, 2, 2, 1, 35, 111, 32, br)},
      {"rescale_inverted_fp32", make_run(TF::rescale_inverted, f32, 1, 1, 1, 40, 150, 32, none)},
      {"rescale_inverted_fp16_causal", make_run(TF::rescale_inverted, f16, 1, 2, 2, 45, 100, 64, br)},
      {"lse_log2_fp32", make_run(TF::lse_in_log2, f32, 1, 1, 1, 40, 100, 32, none)},
      {"lse_log2_bf16_causal", make_run(TF::lse_in_log2, bf16, 2, 2, 2, 30, 60, 64, br)},
      {"lse_no_log_l_fp32", make_run(TF::lse_without_log_l, f32, 1, 1, 1, 40, 100, 32, none)},
      {"lse_no_log_l_fp16_causal", make_run(TF::lse_without_log_l, f16, 1, 2, 1, 21, 70, 64, br)},
      {"batch_stride_fp32", make_run(TF::batch_stride_without_heads, f32, 2, 2, 2, 40, 100, 32, none)},
      {"batch_stride_bf16_gqa_causal", make_run(TF::batch_stride_without_heads, bf16, 2, 4, 2, 25, 64, 64, br)},
      {"gqa_modulo_fp32", make_run(TF::gqa_modulo_head_map, f32, 2, 4, 2, 40, 100, 32, none)},
      {"gqa_modulo_fp16_causal", make_run(TF::gqa_modulo_head_map, f16, 1, 4, 2, 33, 33, 64, br)},
      {"exp2_fp32", make_run(TF::exp2_on_natural_scores, f32, 1, 1, 1, 40, 100, 32, none)},
      {"exp2_bf16_causal_b2", make_run(TF::exp2_on_natural_scores, bf16, 2, 1, 1, 37, 81, 64, br)},
      {"softcap_fp32", make_run(TF::softcap_not_applied, f32, 1, 1, 1, 40, 100, 32, none, 2, 1.5)},
      {"softcap_bf16_causal_h2", make_run(TF::softcap_not_applied, bf16, 1, 2, 2, 29, 90, 64, br, 2, 2.0)},
      {"alibi_fp32", [] {
         FaultKernelRun r = make_run(TF::alibi_not_applied, DType::f32, 1, 2, 2, 40, 100, 32, CausalAlign::none);
         r.attention.alibi_slopes = {0.5, 0.25};
         return r;
       }()},
      {"alibi_bf16_causal_gqa", [] {
         FaultKernelRun r = make_run(TF::alibi_not_applied, DType::bf16, 2, 4, 2, 33, 80, 64, CausalAlign::bottom_right);
         r.attention.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
         return r;
       }()},
      {"divided_twice_fp32", make_run(TF::output_divided_twice, f32, 1, 1, 1, 40, 100, 32, none)},
      {"divided_twice_fp16_causal_gqa", make_run(TF::output_divided_twice, f16, 1, 4, 2, 50, 77, 64, br)},
      {"top_left_fp32", make_run(TF::causal_top_left, f32, 1, 1, 1, 40, 100, 32, br)},
      {"top_left_bf16_b2", make_run(TF::causal_top_left, bf16, 2, 2, 2, 30, 75, 64, br)},
      // One key between the alignments: a diagonal off by one reads the same keys.
      {"top_left_fp32_offset_1", make_run(TF::causal_top_left, f32, 1, 1, 1, 63, 64, 32, br)},
      {"v_tile_lags_fp32", make_run(TF::v_tile_lags, f32, 1, 1, 1, 40, 100, 32, none)},
      {"v_tile_lags_fp16_causal", make_run(TF::v_tile_lags, f16, 2, 2, 2, 45, 90, 64, br)},
      {"m_at_zero_fp32_causal", make_run(TF::m_starts_at_zero, f32, 2, 4, 4, 64, 64, 32, br)},
      {"m_at_zero_bf16_top_left", make_run(TF::m_starts_at_zero, bf16, 2, 4, 2, 33, 90, 64, tl)},
      {"pv_twice_fp32", make_run(TF::pv_added_twice, f32, 1, 1, 1, 40, 100, 32, none)},
      {"pv_twice_fp16_causal", make_run(TF::pv_added_twice, f16, 1, 2, 2, 45, 70, 64, br)},
      {"last_split_diag_fp32_square", make_run(TF::last_split_drops_diagonal, f32, 1, 1, 1, 256, 256, 32, br, 2)},
      {"last_split_diag_bf16_3splits", make_run(TF::last_split_drops_diagonal, bf16, 2, 2, 1, 60, 150, 64, br, 3)},
      {"last_split_diag_fp16_decode", make_run(TF::last_split_drops_diagonal, f16, 1, 2, 2, 1, 200, 128, br, 3)},
      {"split_shift_fp32", make_run(TF::splits_shifted_one_key, f32, 1, 1, 1, 40, 100, 32, none, 2)},
      {"split_shift_bf16_causal_4", make_run(TF::splits_shifted_one_key, bf16, 2, 2, 2, 30, 250, 64, br, 4)},
      {"half_columns_fp32", make_run(TF::partial_o_half_columns, f32, 1, 1, 1, 40, 100, 32, none, 2)},
      {"half_columns_fp16_causal", make_run(TF::partial_o_half_columns, f16, 2, 2, 1, 19, 130, 64, br, 3)},
      {"partial_log2_fp32", make_run(TF::partial_m_in_log2, f32, 1, 1, 1, 40, 100, 32, none, 2)},
      {"partial_log2_bf16_b2h2", make_run(TF::partial_m_in_log2, bf16, 2, 2, 2, 20, 170, 64, none, 3)},
      {"partial_normalized_fp32", make_run(TF::partial_o_normalized, f32, 1, 1, 1, 40, 100, 32, none, 2)},
      {"partial_normalized_fp16_causal", make_run(TF::partial_o_normalized, f16, 1, 2, 2, 33, 140, 128, br, 3)},
      {"merge_o_not_rescaled_fp32", make_run(TF::merge_o_not_rescaled, f32, 1, 1, 1, 40, 200, 32, none, 4)},
      {"merge_o_not_rescaled_bf16", make_run(TF::merge_o_not_rescaled, bf16, 2, 2, 2, 17, 300, 64, none, 3)},
      {"merge_skips_last_fp32", make_run(TF::merge_skips_last_split, f32, 1, 1, 1, 40, 100, 32, none, 2)},
      {"merge_skips_last_fp16_4", make_run(TF::merge_skips_last_split, f16, 1, 2, 1, 9, 300, 64, none, 4)},
      {"merge_next_query_fp32", make_run(TF::merge_reads_next_query, f32, 1, 1, 1, 40, 100, 32, none, 2)},
      {"merge_next_query_bf16_causal", make_run(TF::merge_reads_next_query, bf16, 2, 1, 1, 27, 120, 64, br, 3)},
      {"merge_l_not_rescaled_fp32", make_run(TF::merge_l_not_rescaled, f32, 1, 1, 1, 40, 200, 32, none, 4)},
      {"merge_l_not_rescaled_fp16_causal", make_run(TF::merge_l_not_rescaled, f16, 2, 2, 1, 30, 190, 64, br, 3)},
      {"merge_swapped_fp32", make_run(TF::merge_weights_swapped, f32, 1, 1, 1, 40, 200, 32, none, 4)},
      {"merge_swapped_bf16", make_run(TF::merge_weights_swapped, bf16, 1, 2, 2, 25, 150, 64, none, 3)},
  };
  return c;
}

class DiagnosisFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(DiagnosisFault, LocatesTheBugAndNamesItsMechanismOrNone) {
  TS_SEEDED(seed);
  FaultKernelRun run = GetParam().run;
  run.seed = seed;
  const RunView view = run_fault_kernel(run);
  const AnalysisReport r = analyze_run(view);
  const Expectation e = expect(run);
  SCOPED_TRACE(report_text(r));

  // Where it first goes wrong.
  ASSERT_EQ(r.verdict, Verdict::divergence);
  const Divergence& d = r.first_divergence;
  ASSERT_TRUE(d.found);
  EXPECT_EQ(r.stage_name(d.header.stage), e.place.stage);
  if (!e.place.any_rows) {
    EXPECT_EQ(d.header.batch, e.place.batch);
    EXPECT_EQ(d.header.head, e.place.head);
    EXPECT_EQ(d.header.q_begin, e.place.q_begin);
  }
  if (e.place.split >= 0) {
    EXPECT_EQ(d.header.split, e.place.split);
  }
  if (e.place.step >= 0) {
    EXPECT_EQ(d.header.step, e.place.step);
  }
  if (e.place.min_step >= 0) {
    EXPECT_GE(d.header.step, e.place.min_step);
  }
  // The stage that goes wrong by itself is the first divergence's.
  EXPECT_EQ(r.stage_name(r.symptom.origin_stage), e.place.stage);

  // The right mechanism, or none: never another.
  const std::set<SymptomKind> no_mechanism = {K::unexplained, K::non_finite};
  if (r.symptom.mechanism) {
    EXPECT_TRUE(e.mechanisms.count(r.symptom.mechanism->kind)) << "wrong mechanism " << r.symptom.mechanism->id;
    EXPECT_EQ(r.symptom.category, r.symptom.mechanism->kind);
    EXPECT_FALSE(r.symptom.mechanism->evidence.empty());
  } else if (r.symptom.category == K::competing) {
    for (const Mechanism& m : r.symptom.alternatives) EXPECT_TRUE(e.mechanisms.count(m.kind)) << "wrong alternative " << m.id;
  } else {
    EXPECT_TRUE(no_mechanism.count(r.symptom.category)) << r.symptom.kind;
    EXPECT_FALSE(e.must_name) << "no mechanism named; expected one of the kinds of this fault";
  }
  EXPECT_EQ(r.symptom.kind, std::string(to_string(r.symptom.category)));
  EXPECT_FALSE(r.symptom.line.empty());
  // A count of one takes its noun in the singular ("1 rows that go wrong by themselves" was said).
  const std::string text = report_text(r);
  for (const char* plural : {" 1 rows", "(1 rows", " 1 events", "(1 events"})
    EXPECT_EQ(text.find(plural), std::string::npos) << "\"" << plural << "\" in the report";

  // The measured quantities never contradict the failing sets: where the origin's sets say O wrong
  // (O / l or the unnormalised O) and the finding finds O right, it says O / l is wrong.
  if (const Finding* q = finding(r, "quantities"); q && r.symptom.origin_stage >= 0) {
    const StageReport& origin = r.stages[static_cast<size_t>(r.symptom.origin_stage)];
    if (q->numbers.at("o_wrong") == 0.0 && (origin.failing.quantities & (kFailONorm | kFailORaw)) != 0) {
      EXPECT_NE(q->text.find("(so O / l is wrong)"), std::string::npos) << q->text;
    }
  }

  // Where and how much: every failing stage has its sets; the worst cell is consistent.
  for (const StageReport& s : r.stages)
    if (s.events_failing > 0) {
      EXPECT_EQ(s.failing.events_failing, s.events_failing);
      EXPECT_FALSE(s.failing.query_rows.failing.empty());
      ASSERT_TRUE(s.worst_cell.has_value());
    }
  ASSERT_TRUE(r.worst_cell.has_value());
  const WorstCell& w = *r.worst_cell;
  EXPECT_GT(w.ratio, 1.0);
  if (std::isfinite(w.abs_error)) {
    EXPECT_NEAR(w.abs_error, std::fabs(w.trace - w.reference), 1e-6 * std::max(1.0, std::fabs(w.reference)));
    EXPECT_NEAR(w.ratio, w.abs_error / w.allowed, 1e-3 * w.ratio);
    EXPECT_NEAR(w.allowed, w.atol + w.rtol * w.row_scale, 1e-9 * w.allowed);
  }
  if (e.check) e.check(r);

  // The JSON carries the same.
  const nlohmann::json j = report_json(r);
  EXPECT_EQ(j["symptom_kind"], r.symptom.kind);
  if (r.symptom.mechanism) {
    EXPECT_EQ(j["mechanism"]["id"], r.symptom.mechanism->id);
    EXPECT_FALSE(j["mechanism"]["evidence"].empty());
  } else {
    EXPECT_TRUE(j["mechanism"].is_null());
  }
  EXPECT_TRUE(j["failing_sets"].contains(e.place.stage));
  EXPECT_FALSE(j["worst_cell"].is_null());
  EXPECT_EQ(j["origin_stage"], e.place.stage);
}

INSTANTIATE_TEST_SUITE_P(OwnFaults, DiagnosisFault, ::testing::ValuesIn(fault_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(DiagnosisFault, EveryVariantIsCoveredTwiceAndIsNotABuiltInFault) {
  std::map<TF, int> runs;
  for (const FaultCase& c : fault_cases()) ++runs[c.run.fault];
  for (const TestFaultInfo& f : kTestFaults) {
    if (f.fault == TF::none) continue;
    EXPECT_GE(runs[f.fault], 2) << f.name;
    EXPECT_FALSE(fault_from_name(f.name).has_value()) << f.name << " is a built-in fault";
  }
  EXPECT_GE(std::size(kTestFaults) - 1, 15u);
}

// The correct test kernels: clean in every config (no false positive of the diagnosis).
TEST(DiagnosisFault, CorrectTestKernelsAreClean) {
  TS_SEEDED(seed);
  const auto none = CausalAlign::none, br = CausalAlign::bottom_right, tl = CausalAlign::top_left;
  const FaultKernelRun runs[] = {
      make_run(TF::none, DType::f32, 1, 1, 1, 40, 100, 32, none),
      make_run(TF::none, DType::bf16, 2, 4, 2, 33, 77, 64, br),
      make_run(TF::none, DType::f16, 1, 2, 1, 70, 45, 128, br),  // rows that see no key
      make_run(TF::none, DType::f32, 1, 1, 1, 50, 70, 32, tl),
      make_run(TF::none, DType::bf16, 1, 1, 1, 29, 90, 64, br, 2, 2.0),
      [&] {
        FaultKernelRun r = make_run(TF::none, DType::f32, 1, 2, 1, 40, 100, 32, br);
        r.attention.alibi_slopes = {0.5, 0.25};
        return r;
      }(),
      [&] {
        FaultKernelRun r = make_run(TF::none, DType::f32, 2, 2, 2, 40, 250, 32, br, 4);
        r.shape = KernelShape::split;
        return r;
      }(),
      [&] {
        FaultKernelRun r = make_run(TF::none, DType::f16, 1, 2, 1, 1, 200, 128, none, 3);
        r.shape = KernelShape::split;
        return r;
      }(),
      [&] {
        FaultKernelRun r = make_run(TF::none, DType::bf16, 1, 1, 1, 256, 256, 32, br, 2);
        r.shape = KernelShape::split;
        return r;
      }(),
  };
  for (FaultKernelRun run : runs) {
    run.seed = seed;
    const AnalysisReport r = analyze_run(run_fault_kernel(run));
    EXPECT_EQ(r.verdict, Verdict::clean) << report_text(r);
    EXPECT_EQ(r.symptom.category, K::clean);
    EXPECT_FALSE(r.worst_cell.has_value());
  }
}


// A kernel that rounds P to the input dtype before P V (a tensor-core kernel, p_rounded) may take
// its row sum l before the rounding (FlashAttention-2) or after it (the weights P V used): both
// are correct and clean (was: summed after the rounding, l was off by P's rounding, 1e-4
// relative in fp16, against a bar made from a textbook that sums before it, and every step was
// reported wrong). A fault is still found in such a kernel.
TEST(DiagnosisFault, PRoundedKernelsAreCleanWhicheverPTheirSumTakes) {
  TS_SEEDED(seed);
  const auto none = CausalAlign::none, br = CausalAlign::bottom_right;
  const FaultKernelRun configs[] = {
      make_run(TF::none, DType::f16, 1, 2, 1, 70, 200, 64, none),
      make_run(TF::none, DType::bf16, 2, 2, 2, 33, 150, 128, br),
      make_run(TF::none, DType::f16, 1, 2, 1, 70, 45, 32, br),  // rows that see no key
  };
  for (const PRounding rounding : {PRounding::sum_before, PRounding::sum_after}) {
    for (FaultKernelRun run : configs) {
      run.seed = seed;
      run.p_rounding = rounding;
      const AnalysisReport r = analyze_run(run_fault_kernel(run));
      EXPECT_EQ(r.verdict, Verdict::clean) << "p_rounding " << static_cast<int>(rounding) << "\n" << report_text(r);
    }
    FaultKernelRun faulty = make_run(TF::l_not_rescaled, DType::f16, 1, 2, 1, 70, 200, 64, none);
    faulty.seed = seed;
    faulty.p_rounding = rounding;
    const AnalysisReport r = analyze_run(run_fault_kernel(faulty));
    EXPECT_EQ(r.verdict, Verdict::divergence);
    EXPECT_EQ(r.stage_name(r.symptom.origin_stage), "my_fa1.step") << report_text(r);
  }
}

// A kernel's output probe that leaves its step at 0 (the probe's default: the output is recorded
// once, after the loop) says nothing about when the output was written: it is written from the
// states its block holds after its last step. The report must be the one the same run gives with
// the output numbered after the last step: the first divergence and the origin in the state
// stage, at the step where the fault first acts, and its mechanism named (was: the output, at
// step 0, came before steps 1.. in the kernel's order, was predicted from the first step's state
// and taken for the origin, with no mechanism named and the state stage's mechanism under
// "also"). The correct kernel, numbered so, stays clean.
TEST(DiagnosisFault, AnOutputRecordedAtStepZeroComesAfterItsBlocksStates) {
  TS_SEEDED(seed);
  const auto none = CausalAlign::none, br = CausalAlign::bottom_right;
  const FaultKernelRun runs[] = {
      make_run(TF::o_not_rescaled, DType::f32, 1, 2, 2, 40, 200, 32, none),
      make_run(TF::o_not_rescaled, DType::bf16, 2, 1, 1, 50, 130, 64, br),
      make_run(TF::none, DType::f16, 1, 2, 1, 70, 45, 128, br),
  };
  for (FaultKernelRun run : runs) {
    run.seed = seed;
    const RunView numbered = run_fault_kernel(run);
    RunView at_zero = numbered;
    int rewritten = 0;
    for (size_t i = 0; i < at_zero.num_events(); ++i)
      if (at_zero.stage_of(i).kind == StageKind::final) {
        at_zero.headers[i].step = 0;
        ++rewritten;
      }
    ASSERT_GT(rewritten, 0);
    const AnalysisReport expected = analyze_run(numbered);
    const AnalysisReport r = analyze_run(at_zero);
    SCOPED_TRACE(report_text(r));
    EXPECT_EQ(r.verdict, expected.verdict);
    EXPECT_EQ(r.symptom.kind, expected.symptom.kind);
    if (run.fault == TF::none) {
      EXPECT_EQ(r.verdict, Verdict::clean);
      continue;
    }
    ASSERT_TRUE(r.first_divergence.found);
    EXPECT_EQ(r.stage_name(r.first_divergence.header.stage), "my_fa1.step");
    EXPECT_EQ(r.stage_name(r.symptom.origin_stage), "my_fa1.step");
    EXPECT_GE(r.first_divergence.header.step, 1);  // step 0 has nothing to rescale
    EXPECT_EQ(r.first_divergence.header.step, expected.first_divergence.header.step);
    EXPECT_EQ(r.first_divergence.header.q_begin, expected.first_divergence.header.q_begin);
    ASSERT_TRUE(r.symptom.mechanism.has_value());
    EXPECT_EQ(r.symptom.mechanism->kind, K::o_not_rescaled);
  }
}

}  // namespace
}  // namespace ts::test
