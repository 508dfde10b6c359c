// The naive same-precision baselines' character: the input-dtype naive attention
// (kernels/naive_attention.h) and the per-row-block baselines of the tolerance
// (app/model/analysis/naive_baseline.h) — their errors against the float64 reference grow as
// the precision drops, they respect the masks, they read each query head's own kv head, and a
// row that sees no key gives O = 0, LSE = -inf and no error. (Their arithmetic, element by
// element, is checked bit for bit in test_dtype_conversion.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "app/model/analysis/naive_baseline.h"
#include "base/dtype_conversion.h"
#include "kernels/naive_attention.h"
#include "kernels/reference.h"
#include "tests/kernels/random_head_inputs.h"

namespace ts {
namespace {

using test::random_head_inputs;

AttentionSpec spec_of(int64_t hq, int64_t hkv, int64_t sq, int64_t skv, int64_t d, DType dtype) {
  AttentionSpec s;
  s.heads_q = hq;
  s.heads_kv = hkv;
  s.seq_q = sq;
  s.seq_kv = skv;
  s.head_dim = d;
  s.dtype = dtype;
  return s;
}

double max_error(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;  // also -inf == -inf
    e = std::max(e, std::isnan(a[i]) ? std::numeric_limits<double>::infinity() : std::fabs(a[i] - b[i]));
  }
  return e;
}

TEST(NaiveAttention, ErrorGrowsAsPrecisionDrops) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = spec_of(2, 1, 64, 200, 64, DType::f32);
  s.causal = CausalAlign::bottom_right;
  double err[3];
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    s.dtype = dt;
    const HeadInputs in = random_head_inputs(s, seed);
    const ReferenceOutput ref = reference_output(s, in);
    err[static_cast<int>(dt)] = max_error(naive_attention(s, in).o.to_double(), ref.o);
  }
  EXPECT_GT(err[0], 0.0);
  EXPECT_LT(err[0], 1e-5);
  EXPECT_LT(err[0] * 20, err[1]);
  EXPECT_LT(err[1], err[2]);
  EXPECT_LT(err[2], 0.05);
}

// Keys a row does not see cannot change its output: changing them leaves every bit as it was;
// changing one it sees does not.
TEST(NaiveAttention, MasksAreRespected) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = spec_of(1, 1, 30, 80, 32, DType::bf16);
  s.causal = CausalAlign::top_left;
  s.window_left = 8;
  s.q_lens = {20};
  s.kv_lens = {70};
  const HeadInputs in = random_head_inputs(s, seed);
  const NaiveOutput base = naive_attention(s, in, 1);
  // Rows 0..19 see keys [max(0, i - 8), i]: keys 20 and up are seen by no row.
  HeadInputs changed = in;
  for (int64_t j = 20; j < 80; ++j)
    for (int64_t e = 0; e < 32; ++e) {
      changed.k.set_float(j * 32 + e, 3.0f);
      changed.v.set_float(j * 32 + e, -5.0f);
    }
  const NaiveOutput same = naive_attention(s, changed, 1);
  EXPECT_EQ(same.o.bytes, base.o.bytes);
  EXPECT_EQ(same.lse, base.lse);
  // Row 15 sees keys 7..15: changing key 7 changes row 15 and leaves rows 0..6 alone.
  HeadInputs seen = in;
  for (int64_t e = 0; e < 32; ++e) seen.v.set_float(7 * 32 + e, 7.0f);
  const NaiveOutput other = naive_attention(s, seen, 1);
  for (int64_t e = 0; e < 7 * 32; ++e) EXPECT_EQ(other.o.get_float(e), base.o.get_float(e)) << e;
  EXPECT_NE(other.o.get_float(15 * 32), base.o.get_float(15 * 32));
}

TEST(NaiveAttention, RowsThatSeeNoKeyGiveZeroAndMinusInfinity) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = spec_of(1, 1, 10, 4, 32, DType::f16);
  s.causal = CausalAlign::bottom_right;
  const HeadInputs in = random_head_inputs(s, seed);
  const NaiveOutput naive = naive_attention(s, in);
  // Query i sees keys j <= i - 6: rows 0..5 see none.
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(std::isinf(naive.lse[static_cast<size_t>(i)]) && naive.lse[static_cast<size_t>(i)] < 0, i < 6) << i;
    if (i < 6) {
      for (int e = 0; e < 32; ++e) EXPECT_EQ(naive.o.get_float(i * 32 + e), 0.0f);
    }
  }
}

// Each kv head's V is one constant, a different one per kv head: every output element of query
// head h is then that constant of kv head h / (heads_q / heads_kv), whatever the weights.
TEST(NaiveAttention, QueryHeadsReadTheirGroupsKvHead) {
  TS_PRINTED_SEED(seed);
  for (const auto& [hq, hkv] : {std::pair<int64_t, int64_t>{6, 2}, {4, 1}, {3, 3}}) {
    AttentionSpec s = spec_of(hq, hkv, 5, 40, 32, DType::f32);
    s.batch = 2;
    HeadInputs in = random_head_inputs(s, seed);
    for (int64_t p = 0; p < static_cast<int64_t>(in.kv_pairs.size()); ++p)
      for (int64_t e = 0; e < s.seq_kv * s.head_dim; ++e)
        in.v.set_float(p * s.seq_kv * s.head_dim + e, static_cast<float>(10 * in.kv_pairs[static_cast<size_t>(p)][0] +
                                                                         in.kv_pairs[static_cast<size_t>(p)][1] + 1));
    const NaiveOutput naive = naive_attention(s, in);
    const ReferenceOutput ref = reference_output(s, in);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < hq; ++h) {
        const double want = static_cast<double>(10 * b + h / (hq / hkv) + 1);
        const int64_t first = (b * hq + h) * s.seq_q * s.head_dim;
        for (int64_t e = 0; e < s.seq_q * s.head_dim; ++e) {
          ASSERT_NEAR(naive.o.get_float(first + e), want, 1e-5 * want) << "batch " << b << ", head " << h;
          ASSERT_NEAR(ref.o[static_cast<size_t>(first + e)], want, 1e-12 * want) << "batch " << b << ", head " << h;
        }
      }
  }
}

// pair_floats converts each kv head once: the query heads of a group share it.
TEST(NaiveBaseline, PairFloatsShareEachKvHeadAcrossItsGroup) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = spec_of(6, 2, 7, 20, 24, DType::bf16);
  s.batch = 2;
  const HeadInputs in = random_head_inputs(s, seed);
  const std::vector<PairFloats> floats = pair_floats(s, in);
  ASSERT_EQ(floats.size(), in.q_pairs.size());
  for (size_t i = 0; i < floats.size(); ++i) {
    const PairFloats& f = floats[i];
    EXPECT_EQ(f.batch, in.q_pairs[i][0]);
    EXPECT_EQ(f.head, in.q_pairs[i][1]);
    EXPECT_EQ(f.q[5], in.q.get_float(static_cast<int64_t>(i) * 7 * 24 + 5));
    const int32_t kv = in.kv_index(f.batch, f.head / 3);
    EXPECT_EQ(f.keys->v[17], in.v.get_float(int64_t{kv} * 20 * 24 + 17));
    for (size_t j = 0; j < floats.size(); ++j) {
      const bool same_kv = floats[j].batch == f.batch && floats[j].head / 3 == f.head / 3;
      EXPECT_EQ(floats[j].keys == f.keys, same_kv) << i << " " << j;
    }
  }
  HeadInputs missing = random_head_inputs(s, seed, {{0, 4}}, {{0, 0}});
  EXPECT_THROW(pair_floats(s, missing), std::invalid_argument);
}

NaiveErrors errors_over_blocks(const AttentionSpec& s, const HeadInputs& in, int32_t rows,
                               const std::vector<int64_t>& boundaries) {
  const ReferenceInputs prepared(s, in, 1);
  const std::vector<PairFloats> floats = pair_floats(s, in);
  NaiveErrors all;
  for (const PairFloats& f : floats)
    for (int32_t q0 = 0; q0 < s.seq_q; q0 += rows) {
      const RowBlock block{f.batch, f.head, q0, static_cast<int32_t>(std::min<int64_t>(rows, s.seq_q - q0))};
      all = max_errors(all, naive_row_block_errors(s, f, *compute_row_block(prepared, block, boundaries)));
    }
  return all;
}

// The float32 textbook states are float32-sized errors, whatever the input dtype; the final
// output's baseline is the input dtype's: much larger in bf16. A wrong kv head, key or mask
// would give errors of order 1.
TEST(NaiveBaseline, ErrorsHaveTheSizeOfTheirPrecision) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = spec_of(4, 2, 37, 129, 64, DType::f32);
  s.batch = 2;
  s.causal = CausalAlign::bottom_right;
  s.window_left = 50;
  s.softcap = 4.0;
  s.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  s.kv_lens = {129, 90};
  NaiveErrors e[3];
  for (DType dt : {DType::f32, DType::bf16}) {
    s.dtype = dt;
    const HeadInputs in = random_head_inputs(s, seed);
    e[static_cast<int>(dt)] = errors_over_blocks(s, in, 8, {16, 64, 100});
  }
  for (DType dt : {DType::f32, DType::bf16}) {
    const NaiveErrors& x = e[static_cast<int>(dt)];
    SCOPED_TRACE(std::string(to_string(dt)));
    EXPECT_GT(x.m_f32, 0.0);
    EXPECT_LT(x.m_f32, 1e-4);
    EXPECT_GT(x.l_rel_f32, 0.0);
    EXPECT_LT(x.l_rel_f32, 1e-4);
    EXPECT_GT(x.o_norm_f32, 0.0);
    EXPECT_LT(x.o_norm_f32, 1e-4);
    EXPECT_GT(x.o_dtype, 0.0);
    EXPECT_GT(x.lse_dtype, 0.0);
  }
  const NaiveErrors& f32 = e[static_cast<int>(DType::f32)];
  const NaiveErrors& bf16 = e[static_cast<int>(DType::bf16)];
  EXPECT_LT(f32.o_dtype, 1e-4);
  EXPECT_GT(bf16.o_dtype, 10 * bf16.o_norm_f32);
  EXPECT_GT(bf16.o_dtype, 10 * f32.o_dtype);
  EXPECT_LT(bf16.o_dtype, 0.05);
}

// Rows that see no key (here: causal, more queries than keys) hold -inf / 0 / 0 on both sides:
// no error, and no infinite one.
TEST(NaiveBaseline, RowsThatSeeNoKeyAddNoError) {
  TS_PRINTED_SEED(seed);
  for (DType dt : {DType::f32, DType::f16}) {
    AttentionSpec s = spec_of(1, 1, 40, 8, 32, dt);
    s.causal = CausalAlign::bottom_right;
    const HeadInputs in = random_head_inputs(s, seed);
    const ReferenceInputs prepared(s, in, 1);
    const std::vector<PairFloats> floats = pair_floats(s, in);
    const NaiveErrors none = naive_row_block_errors(s, floats[0], *compute_row_block(prepared, {0, 0, 0, 32}, {4}));
    EXPECT_EQ(none.m_f32, 0.0);
    EXPECT_EQ(none.l_rel_f32, 0.0);
    EXPECT_EQ(none.o_norm_f32, 0.0);
    EXPECT_EQ(none.o_dtype, 0.0);
    EXPECT_EQ(none.lse_dtype, 0.0);
    const NaiveErrors some = naive_row_block_errors(s, floats[0], *compute_row_block(prepared, {0, 0, 30, 10}, {4}));
    EXPECT_TRUE(std::isfinite(some.m_f32) && std::isfinite(some.o_norm_f32) && std::isfinite(some.l_rel_f32));
    EXPECT_TRUE(std::isfinite(some.o_dtype) && std::isfinite(some.lse_dtype));
    EXPECT_GT(some.o_norm_f32, 0.0);
  }
}

// textbook_states against the textbook written out here, element by element (scores over the
// head dim in order, then per piece and over all keys the max, exp and sums in key order, each
// term of a dot product a fused multiply-add in float32): the same bits, whichever loops (plain or AVX2) ran.
TEST(NaiveBaseline, TextbookStatesAreTheElementByElementTextbook) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = spec_of(2, 1, 19, 77, 24, DType::bf16);
  s.causal = CausalAlign::bottom_right;
  s.window_left = 40;
  s.alibi_slopes = {0.25, 0.5};
  s.softcap = 3.0;
  const HeadInputs in = random_head_inputs(s, seed);
  const std::vector<PairFloats> floats = pair_floats(s, in);
  const std::vector<int64_t> bounds{0, 10, 33, 34, 60, 77};
  const int64_t row0 = 4, rows = 13, d = 24, h = 1;
  const TextbookStates st = textbook_states(s, 0, h, floats[1].q.data(), *floats[1].keys, row0, rows, bounds);
  const float scale = static_cast<float>(s.effective_scale());
  const float cap = static_cast<float>(s.softcap), slope = static_cast<float>(s.alibi_slopes[1]);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = row0 + r, diagonal = i + 77 - 19;
    std::vector<float> score(77);
    std::vector<bool> seen(77);
    for (int64_t j = 0; j < 77; ++j) {
      seen[static_cast<size_t>(j)] = j <= diagonal && j >= diagonal - 40;
      float x = 0;
      for (int64_t e = 0; e < d; ++e)
        x = std::fma(in.q.get_float((1 * 19 + i) * d + e), in.k.get_float(j * d + e) * scale, x);
      x = cap * std::tanh(x / cap) - slope * static_cast<float>(std::abs(diagonal - j));
      score[static_cast<size_t>(j)] = x;
    }
    // keys [a, b): m, l, O as the textbook's loops take them
    auto state = [&](int64_t a, int64_t b, float& m, float& l, std::vector<float>& o) {
      m = -std::numeric_limits<float>::infinity();
      l = 0;
      o.assign(static_cast<size_t>(d), 0.0f);
      for (int64_t j = a; j < b; ++j)
        if (seen[static_cast<size_t>(j)]) m = std::max(m, score[static_cast<size_t>(j)]);
      for (int64_t j = a; j < b; ++j) {
        if (!seen[static_cast<size_t>(j)]) continue;
        const float p = std::exp(score[static_cast<size_t>(j)] - m);
        l += p;
        for (int64_t e = 0; e < d; ++e)
          o[static_cast<size_t>(e)] = std::fma(p, in.v.get_float(j * d + e), o[static_cast<size_t>(e)]);
      }
    };
    float m, l;
    std::vector<float> o;
    for (size_t p = 0; p + 1 < bounds.size(); ++p) {
      state(bounds[p], bounds[p + 1], m, l, o);
      const size_t at = p * rows + static_cast<size_t>(r);
      EXPECT_EQ(st.piece_m[at], m) << "row " << i << ", piece " << p;
      EXPECT_EQ(st.piece_l[at], l) << "row " << i << ", piece " << p;
      for (int64_t e = 0; e < d; ++e)
        ASSERT_EQ(st.piece_o[at * d + e], o[static_cast<size_t>(e)]) << "row " << i << ", piece " << p;
    }
    state(0, 77, m, l, o);
    EXPECT_EQ(st.all_m[static_cast<size_t>(r)], m) << "row " << i;
    EXPECT_EQ(st.all_l[static_cast<size_t>(r)], l) << "row " << i;
    for (int64_t e = 0; e < d; ++e) ASSERT_EQ(st.all_o[r * d + e], o[static_cast<size_t>(e)]) << "row " << i;
  }
  EXPECT_THROW(textbook_states(s, 0, h, floats[1].q.data(), *floats[1].keys, row0, rows, std::vector<int64_t>{0, 50}),
               std::invalid_argument);
}

// The exp2-folded textbook states (StageInfo::exp2_folded) against the fold written out here:
// unscaled scores q . k, m = max * scale, weights exp2(fma(s, scale log2 e, -(m log2 e))), in
// float32; with a softcap, from the capped scaled scores with log2 e alone. P rounded to the
// dtype when asked. Head dim 24: a scale that is no power of two, so the unscaled keys matter.
TEST(NaiveBaseline, FoldedTextbookStatesAreTheElementByElementFold) {
  TS_PRINTED_SEED(seed);
  for (const double softcap : {0.0, 3.0}) {
    AttentionSpec s = spec_of(1, 1, 9, 70, 24, DType::f16);
    s.causal = CausalAlign::bottom_right;
    s.softcap = softcap;
    const HeadInputs in = random_head_inputs(s, seed, 300.0);  // scores of about 1e4
    const std::vector<PairFloats> floats = pair_floats(s, in, 0, /*raw_keys=*/true);
    const std::vector<int64_t> bounds{0, 64, 70};
    const float scale = static_cast<float>(s.effective_scale()), log2e = std::numbers::log2e_v<float>;
    const float cap = static_cast<float>(softcap);
    for (const DType p_dtype : {DType::f32, DType::f16}) {
      const TextbookStates st = textbook_states(s, 0, 0, floats[0].q.data(), *floats[0].keys, 0, 9, bounds, p_dtype,
                                                /*exp2_folded=*/true);
      for (int64_t i = 0; i < 9; ++i) {
        const int64_t last = i + 70 - 9;  // bottom-right causal: keys 0..last
        std::vector<float> score(70);
        for (int64_t j = 0; j <= last; ++j) {
          float x = 0;
          for (int64_t e = 0; e < 24; ++e)
            x = std::fma(in.q.get_float(i * 24 + e), softcap > 0 ? in.k.get_float(j * 24 + e) * scale : in.k.get_float(j * 24 + e), x);
          if (softcap > 0) x = cap * std::tanh(x / cap);
          score[static_cast<size_t>(j)] = x;
        }
        auto state = [&](int64_t a, int64_t b, float& m, float& l, std::vector<float>& o) {
          m = -std::numeric_limits<float>::infinity();
          l = 0;
          o.assign(24, 0.0f);
          for (int64_t j = a; j < b && j <= last; ++j) m = std::max(m, score[static_cast<size_t>(j)]);
          if (softcap <= 0) m *= scale;
          const float factor = softcap > 0 ? log2e : scale * log2e, neg_shift = -m * log2e;
          for (int64_t j = a; j < b && j <= last; ++j) {
            float p = std::exp2(std::fma(score[static_cast<size_t>(j)], factor, neg_shift));
            l += p;
            if (p_dtype != DType::f32) round_to_dtype(p_dtype, &p, 1);
            for (int64_t e = 0; e < 24; ++e) o[static_cast<size_t>(e)] = std::fma(p, in.v.get_float(j * 24 + e), o[static_cast<size_t>(e)]);
          }
        };
        float m, l;
        std::vector<float> o;
        for (size_t p = 0; p + 1 < bounds.size(); ++p) {
          state(bounds[p], bounds[p + 1], m, l, o);
          const size_t at = p * 9 + static_cast<size_t>(i);
          EXPECT_EQ(st.piece_m[at], m) << "row " << i << ", piece " << p;
          EXPECT_EQ(st.piece_l[at], l) << "row " << i << ", piece " << p;
          for (int64_t e = 0; e < 24; ++e) ASSERT_EQ(st.piece_o[at * 24 + e], o[static_cast<size_t>(e)]) << "row " << i;
        }
        state(0, 70, m, l, o);
        EXPECT_EQ(st.all_m[static_cast<size_t>(i)], m) << "row " << i;
        EXPECT_EQ(st.all_l[static_cast<size_t>(i)], l) << "row " << i;
        for (int64_t e = 0; e < 24; ++e) ASSERT_EQ(st.all_o[i * 24 + e], o[static_cast<size_t>(e)]) << "row " << i;
      }
    }
  }
  // Without a softcap the fold reads the unscaled keys, which the keys must hold.
  AttentionSpec s = spec_of(1, 1, 4, 20, 24, DType::f16);
  const HeadInputs in = random_head_inputs(s, seed);
  const std::vector<PairFloats> floats = pair_floats(s, in);
  EXPECT_THROW(textbook_states(s, 0, 0, floats[0].q.data(), *floats[0].keys, 0, 4, std::vector<int64_t>{0, 20},
                               DType::f32, true),
               std::invalid_argument);
}

// The output's baseline is naive_attention's output on the row block's rows: the same figures.
TEST(NaiveBaseline, OutputErrorIsTheNaiveAttentions) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = spec_of(2, 2, 24, 50, 32, DType::f16);
  s.causal = CausalAlign::top_left;
  const HeadInputs in = random_head_inputs(s, seed);
  const NaiveOutput naive = naive_attention(s, in);
  const ReferenceOutput ref = reference_output(s, in);
  const NaiveErrors e = errors_over_blocks(s, in, 8, {25});
  double o_err = 0, lse_err = 0;
  for (size_t i = 0; i < ref.o.size(); ++i)
    o_err = std::max(o_err, std::fabs(naive.o.get_float(static_cast<int64_t>(i)) - ref.o[i]));
  for (size_t i = 0; i < ref.lse.size(); ++i) lse_err = std::max(lse_err, std::fabs(naive.lse[i] - ref.lse[i]));
  EXPECT_NEAR(e.o_dtype, o_err, 1e-12);
  EXPECT_NEAR(e.lse_dtype, lse_err, 1e-12);
}

// Consecutive row blocks taken together give the largest of each block's errors taken alone,
// exactly (each row's arithmetic is its own), for every figure, with masks that make the rows see
// different keys, in every formulation (P rounded or not, exponents folded or not); blocks that are not consecutive rows of one pair with the same
// boundaries are refused.
TEST(NaiveBaseline, RowBlocksTakenTogetherGiveTheLargestOfEachAlone) {
  TS_PRINTED_SEED(seed);
  std::mt19937_64 rng(seed);
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (int mask = 0; mask < 3; ++mask) {
      SCOPED_TRACE(std::string(to_string(dt)) + " mask " + std::to_string(mask));
      AttentionSpec s = spec_of(3, 1, 45, 150, 32, dt);
      if (mask == 1) s.causal = CausalAlign::bottom_right;
      if (mask == 2) s.window_left = 20, s.window_right = 7;
      const HeadInputs in = random_head_inputs(s, rng());
      const ReferenceInputs prepared(s, in, 1);
      const std::vector<PairFloats> floats = pair_floats(s, in, 1, /*raw_keys=*/true);  // for the folded forms
      const PairFloats& f = floats[static_cast<size_t>(rng() % floats.size())];
      const std::vector<int64_t> cuts = {static_cast<int64_t>(rng() % 150), 64, 128};
      std::vector<RowBlock> blocks;
      for (int32_t q = static_cast<int32_t>(rng() % 10); q < s.seq_q;) {
        const int32_t rows = std::min<int32_t>(static_cast<int32_t>(s.seq_q) - q, 1 + static_cast<int32_t>(rng() % 9));
        blocks.push_back({f.batch, f.head, q, rows});
        q += rows;
      }
      std::vector<std::shared_ptr<const RowBlockReference>> refs;
      std::vector<const RowBlockReference*> ptrs;
      for (const RowBlock& b : blocks) {
        refs.push_back(compute_row_block(prepared, b, cuts));
        ptrs.push_back(refs.back().get());
      }
      for (const StageForms forms : {StageForms{}, StageForms{true, false, false}, StageForms{false, true, false},
                                     StageForms{false, false, true}}) {
        NaiveErrors alone;
        for (const RowBlockReference* r : ptrs)
          alone = max_errors(alone, naive_row_block_errors(s, f, *r, nullptr, forms));
        const NaiveErrors together = naive_row_block_errors(s, f, ptrs, nullptr, forms);
        EXPECT_GT(together.o_norm_f32, 0.0);
        EXPECT_EQ(together.m_f32, alone.m_f32);
        EXPECT_EQ(together.l_rel_f32, alone.l_rel_f32);
        EXPECT_EQ(together.o_norm_f32, alone.o_norm_f32);
        EXPECT_EQ(together.o_norm_p_rounded, alone.o_norm_p_rounded);
        EXPECT_EQ(together.l_rel_p_rounded, alone.l_rel_p_rounded);
        EXPECT_EQ(together.l_rel_folded_p_rounded, alone.l_rel_folded_p_rounded);
        EXPECT_EQ(together.m_folded, alone.m_folded);
        EXPECT_EQ(together.l_rel_folded, alone.l_rel_folded);
        EXPECT_EQ(together.o_norm_folded, alone.o_norm_folded);
        EXPECT_EQ(together.o_norm_folded_p_rounded, alone.o_norm_folded_p_rounded);
        EXPECT_EQ(together.o_dtype, alone.o_dtype);
        EXPECT_EQ(together.lse_dtype, alone.lse_dtype);
      }
      ASSERT_GE(ptrs.size(), 3u);
      const std::vector<const RowBlockReference*> gap = {ptrs[0], ptrs[2]};
      EXPECT_THROW(naive_row_block_errors(s, f, gap), std::invalid_argument);
      const auto other_cuts = compute_row_block(prepared, blocks[1], {5});
      const std::vector<const RowBlockReference*> cut_otherwise = {ptrs[0], other_cuts.get()};
      EXPECT_THROW(naive_row_block_errors(s, f, cut_otherwise), std::invalid_argument);
    }
}

TEST(NaiveBaseline, RejectsTheInputsOfAnotherPair) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = spec_of(2, 2, 8, 16, 32, DType::f32);
  const HeadInputs in = random_head_inputs(s, seed);
  const std::vector<PairFloats> floats = pair_floats(s, in);
  const auto ref = compute_row_block(s, in, {0, 1, 0, 8}, {});
  EXPECT_THROW(naive_row_block_errors(s, floats[0], *ref), std::invalid_argument);
  EXPECT_NO_THROW(naive_row_block_errors(s, floats[1], *ref));
}

}  // namespace
}  // namespace ts
