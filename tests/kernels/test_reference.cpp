// The float64 reference (kernels/reference.h) against a brute-force computation written here
// from the definitions alone: per element, in long double, with the keys each row sees spelled
// out from base/attention_spec.h's comment rather than taken from AttentionSpec::visible_keys
// (restating the rule is the point of an independent check), for every variant of the attention
// description (GQA / MQA, both causal alignments with seq_q above and below seq_kv, sliding
// windows, softcap, per-batch lengths, ALiBi, a custom scale) and every kind of key ranges; the
// output; `express` in every convention; and the reference's contracts (errors, pairs, bytes).
//
// Tolerance: the reference computes in double what the brute force computes in long double.
// Its sums (a dot product of head_dim terms, a sum of at most a few hundred exponentials, a
// merge of a few pieces) lose at most some hundreds of double ulps, ~1e-14 relative; 1e-12
// relative (of max(1, |m|) for m, of l for l, of l * max |v| for O, the size of a sum of
// weighted values) leaves a margin and still catches a wrong key, mask, scale or head (errors of
// 1e-3 and up).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/config_error.h"
#include "kernels/reference.h"
#include "tests/kernels/random_head_inputs.h"

namespace ts {
namespace {

using test::random_head_inputs;
using LD = long double;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kRel = 1e-12;

// Whether query row i of batch b sees key j: base/attention_spec.h's definition, written out.
bool row_sees_key(const AttentionSpec& s, int64_t b, int64_t i, int64_t j) {
  const int64_t q_len = s.q_lens.empty() ? s.seq_q : s.q_lens[static_cast<size_t>(b)];
  const int64_t kv_len = s.kv_lens.empty() ? s.seq_kv : s.kv_lens[static_cast<size_t>(b)];
  if (i >= q_len || j >= kv_len) return false;
  const int64_t diagonal = s.causal == CausalAlign::top_left ? i : i + kv_len - q_len;
  if (s.causal != CausalAlign::none && j > diagonal) return false;
  if (s.window_left >= 0 && j < diagonal - s.window_left) return false;
  if (s.window_right >= 0 && j > diagonal + s.window_right) return false;
  return true;
}

// The attention computed element by element in long double.
class BruteForce {
 public:
  struct State {
    LD m = -std::numeric_limits<LD>::infinity(), l = 0;
    std::vector<LD> o;
    int64_t keys = 0;  // keys seen
  };

  BruteForce(const AttentionSpec& spec, const HeadInputs& in) : s_(spec), in_(in) {}

  // The state of row i of (b, h) over the keys marked in `keys` (all keys when empty).
  State state(int64_t b, int64_t h, int64_t i, const std::vector<bool>& keys = {}) {
    const Row& row = scores(b, h, i);
    const int32_t kv = in_.kv_index(b, h / (s_.heads_q / s_.heads_kv));
    State st;
    st.o.assign(static_cast<size_t>(s_.head_dim), 0);
    for (int64_t j = 0; j < s_.seq_kv; ++j)
      if (row.seen[static_cast<size_t>(j)] && (keys.empty() || keys[static_cast<size_t>(j)])) {
        st.m = std::max(st.m, row.score[static_cast<size_t>(j)]);
        ++st.keys;
      }
    for (int64_t j = 0; j < s_.seq_kv; ++j) {
      if (!row.seen[static_cast<size_t>(j)] || !(keys.empty() || keys[static_cast<size_t>(j)])) continue;
      const LD p = std::exp(row.score[static_cast<size_t>(j)] - st.m);
      st.l += p;
      for (int64_t c = 0; c < s_.head_dim; ++c)
        st.o[static_cast<size_t>(c)] += p * static_cast<LD>(in_.v.get_float((kv * s_.seq_kv + j) * s_.head_dim + c));
    }
    return st;
  }

  // The largest |v| the rows of (b, h) read: the scale of O's error.
  LD v_max() const {
    LD mx = 0;
    for (int64_t e = 0; e < in_.v.numel(); ++e) mx = std::max(mx, std::fabs(static_cast<LD>(in_.v.get_float(e))));
    return mx;
  }

 private:
  struct Row {
    std::vector<LD> score;
    std::vector<bool> seen;
  };

  const Row& scores(int64_t b, int64_t h, int64_t i) {
    auto [it, fresh] = rows_.try_emplace({b, h, i});
    if (!fresh) return it->second;
    Row& row = it->second;
    const int32_t qi = in_.q_index(b, h);
    const int32_t kv = in_.kv_index(b, h / (s_.heads_q / s_.heads_kv));
    const LD scale = s_.scale > 0 ? static_cast<LD>(s_.scale) : 1 / std::sqrt(static_cast<LD>(s_.head_dim));
    const int64_t q_len = s_.q_lens.empty() ? s_.seq_q : s_.q_lens[static_cast<size_t>(b)];
    const int64_t kv_len = s_.kv_lens.empty() ? s_.seq_kv : s_.kv_lens[static_cast<size_t>(b)];
    const int64_t diagonal = s_.causal == CausalAlign::top_left ? i : i + kv_len - q_len;
    for (int64_t j = 0; j < s_.seq_kv; ++j) {
      row.seen.push_back(row_sees_key(s_, b, i, j));
      LD dot = 0;
      for (int64_t c = 0; c < s_.head_dim; ++c)
        dot += static_cast<LD>(in_.q.get_float((qi * s_.seq_q + i) * s_.head_dim + c)) *
               static_cast<LD>(in_.k.get_float((kv * s_.seq_kv + j) * s_.head_dim + c));
      LD x = scale * dot;
      if (s_.softcap > 0) x = static_cast<LD>(s_.softcap) * std::tanh(x / static_cast<LD>(s_.softcap));
      if (!s_.alibi_slopes.empty())
        x -= static_cast<LD>(s_.alibi_slopes[static_cast<size_t>(h)]) * std::fabs(static_cast<LD>(diagonal - j));
      row.score.push_back(x);
    }
    return row;
  }

  const AttentionSpec& s_;
  const HeadInputs& in_;
  std::map<std::array<int64_t, 3>, Row> rows_;
};

// The keys in any of `ranges`, each range clipped to [0, seq_kv].
std::vector<bool> keys_in(const std::vector<KeyRange>& ranges, int64_t seq_kv) {
  std::vector<bool> in(static_cast<size_t>(seq_kv), false);
  for (const KeyRange& r : ranges)
    for (int64_t j = std::max<int64_t>(0, r.begin); j < std::min<int64_t>(seq_kv, r.end); ++j)
      in[static_cast<size_t>(j)] = true;
  return in;
}

std::string ranges_text(const std::vector<KeyRange>& ranges) {
  std::string t;
  for (const KeyRange& r : ranges) t += "[" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ") ";
  return t;
}

bool near(double got, LD want, LD tol) { return std::fabs(static_cast<LD>(got) - want) <= tol; }

// Row r of an unnormalised state against the brute force.
::testing::AssertionResult row_matches(const RefState& got, int32_t r, const BruteForce::State& want, LD v_max) {
  const size_t d = static_cast<size_t>(got.head_dim), row = static_cast<size_t>(r);
  const double* o = got.o.data() + row * d;
  if (want.keys == 0) {
    if (got.m[row] != -kInf || got.l[row] != 0.0)
      return ::testing::AssertionFailure() << "row " << r << " sees no key: want -inf / 0, got " << got.m[row] << " / "
                                           << got.l[row];
    for (size_t c = 0; c < d; ++c)
      if (o[c] != 0.0) return ::testing::AssertionFailure() << "row " << r << " sees no key: O[" << c << "] = " << o[c];
    return ::testing::AssertionSuccess();
  }
  if (!near(got.m[row], want.m, kRel * std::max<LD>(1, std::fabs(want.m))))
    return ::testing::AssertionFailure() << "row " << r << ": m " << got.m[row] << " vs "
                                         << static_cast<double>(want.m);
  if (!near(got.l[row], want.l, kRel * want.l))
    return ::testing::AssertionFailure() << "row " << r << ": l " << got.l[row] << " vs "
                                         << static_cast<double>(want.l);
  for (size_t c = 0; c < d; ++c)
    if (!near(o[c], want.o[c], kRel * want.l * v_max))
      return ::testing::AssertionFailure() << "row " << r << ": O[" << c << "] " << o[c] << " vs "
                                           << static_cast<double>(want.o[c]);
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult state_matches(const RefState& got, const RowBlock& block, BruteForce& brute,
                                         const std::vector<KeyRange>& ranges, int64_t seq_kv, LD v_max) {
  if (got.normalized || got.rows != block.rows) return ::testing::AssertionFailure() << "shape or convention";
  const std::vector<bool> keys = keys_in(ranges, seq_kv);
  for (int32_t r = 0; r < block.rows; ++r) {
    auto ok = row_matches(got, r, brute.state(block.batch, block.head, block.q_begin + r, keys), v_max);
    if (!ok) return ok << " (keys " << ranges_text(ranges) << ")";
  }
  return ::testing::AssertionSuccess();
}

// Row r of a normalised output against the brute force over all keys.
::testing::AssertionResult output_row_matches(double lse, const double* o, int64_t d, const BruteForce::State& want,
                                              LD v_max) {
  if (want.keys == 0) {
    if (lse != -kInf) return ::testing::AssertionFailure() << "a row that sees no key has LSE " << lse;
    for (int64_t c = 0; c < d; ++c)
      if (o[c] != 0.0) return ::testing::AssertionFailure() << "a row that sees no key has O[" << c << "] = " << o[c];
    return ::testing::AssertionSuccess();
  }
  const LD want_lse = want.m + std::log(want.l);
  if (!near(lse, want_lse, kRel * std::max<LD>(1, std::fabs(want_lse))))
    return ::testing::AssertionFailure() << "LSE " << lse << " vs " << static_cast<double>(want_lse);
  for (int64_t c = 0; c < d; ++c)
    if (!near(o[c], want.o[static_cast<size_t>(c)] / want.l, kRel * v_max))
      return ::testing::AssertionFailure() << "O[" << c << "] " << o[c] << " vs "
                                           << static_cast<double>(want.o[static_cast<size_t>(c)] / want.l);
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string name;
  AttentionSpec spec;
  double input_scale = 1.0;  // of Q and K: larger scores (softcap), or ones that tie less
};

AttentionSpec base_spec(int64_t batch, int64_t hq, int64_t hkv, int64_t sq, int64_t skv, int64_t d, DType dtype) {
  AttentionSpec s;
  s.batch = batch;
  s.heads_q = hq;
  s.heads_kv = hkv;
  s.seq_q = sq;
  s.seq_kv = skv;
  s.head_dim = d;
  s.dtype = dtype;
  return s;
}

// Every variant the description allows, alone and together, at odd sizes.
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  auto add = [&](std::string name, AttentionSpec s, double input_scale = 1.0) {
    validate(s);
    cases.push_back({std::move(name), std::move(s), input_scale});
  };
  add("mha fp32", base_spec(2, 2, 2, 37, 37, 24, DType::f32));
  {
    AttentionSpec s = base_spec(1, 6, 2, 37, 129, 64, DType::bf16);
    s.causal = CausalAlign::bottom_right;
    add("gqa bf16 causal bottom-right", s);
  }
  {
    AttentionSpec s = base_spec(1, 4, 1, 129, 37, 24, DType::f16);
    s.causal = CausalAlign::top_left;
    add("mqa fp16 causal top-left, seq_q > seq_kv", s);
  }
  {
    AttentionSpec s = base_spec(1, 1, 1, 129, 37, 24, DType::f32);
    s.causal = CausalAlign::bottom_right;
    add("causal bottom-right, seq_q > seq_kv (rows that see no key)", s);
  }
  {
    AttentionSpec s = base_spec(1, 2, 2, 37, 129, 64, DType::bf16);
    s.causal = CausalAlign::top_left;
    add("causal top-left, seq_q < seq_kv", s);
  }
  {
    AttentionSpec s = base_spec(1, 1, 1, 37, 129, 24, DType::f32);
    s.causal = CausalAlign::bottom_right;
    add("causal bottom-right, seq_q < seq_kv", s);
  }
  {
    AttentionSpec s = base_spec(1, 2, 1, 37, 129, 24, DType::f32);
    s.window_left = 10;
    add("window left only", s);
    s.window_left = -1;
    s.window_right = 5;
    add("window right only", s);
    s.window_left = 7;
    s.window_right = 3;
    add("window both", s);
    s.causal = CausalAlign::bottom_right;
    s.window_left = 16;
    s.window_right = 4;
    add("window both, causal bottom-right", s);
    s.causal = CausalAlign::top_left;
    s.window_left = 5;
    s.window_right = -1;
    add("window left, causal top-left", s);
  }
  {
    AttentionSpec s = base_spec(1, 2, 2, 37, 129, 24, DType::f32);
    s.softcap = 2.0;
    add("softcap", s, 2.0);
  }
  {
    AttentionSpec s = base_spec(3, 2, 1, 37, 129, 24, DType::bf16);
    s.causal = CausalAlign::bottom_right;
    s.q_lens = {37, 0, 20};
    s.kv_lens = {100, 50, 0};
    add("varlen, causal bottom-right, a batch of each length 0", s);
  }
  {
    AttentionSpec s = base_spec(2, 1, 1, 37, 129, 24, DType::f16);
    s.causal = CausalAlign::top_left;
    s.window_left = 3;
    s.q_lens = {5, 37};
    s.kv_lens = {129, 7};
    add("varlen, causal top-left, window", s);
  }
  {
    AttentionSpec s = base_spec(1, 4, 2, 37, 129, 24, DType::f32);
    s.alibi_slopes = {0.5, 0.125, 0.03125, 1.0 / 128};
    add("alibi", s);
    s.causal = CausalAlign::bottom_right;
    add("alibi, causal bottom-right", s);
  }
  {
    AttentionSpec s = base_spec(1, 2, 2, 37, 129, 64, DType::f16);
    s.scale = 0.3;
    add("custom scale", s);
  }
  {
    AttentionSpec s = base_spec(2, 4, 2, 37, 129, 24, DType::bf16);
    s.causal = CausalAlign::bottom_right;
    s.window_left = 20;
    s.window_right = 2;
    s.softcap = 3.0;
    s.alibi_slopes = {0.25, 0.0625, 0.5, 0.01};
    s.q_lens = {37, 11};
    s.kv_lens = {129, 60};
    s.scale = 0.2;
    add("everything: gqa, causal, window, softcap, alibi, varlen, scale", s, 2.0);
  }
  return cases;
}

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // [lo, hi]
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Boundaries as a caller might pass them: unsorted, with duplicates and values outside [0, seq_kv].
std::vector<int64_t> random_boundaries(std::mt19937_64& rng, int64_t seq_kv) {
  std::vector<int64_t> b;
  const int64_t n = uniform(rng, 0, 6);
  for (int64_t k = 0; k < n; ++k) b.push_back(uniform(rng, -5, seq_kv + 5));
  if (!b.empty()) b.push_back(b.front());
  return b;
}

// Key ranges of every kind: on the boundaries, off them, empty, inverted, overlapping, outside.
std::vector<KeyRange> random_ranges(std::mt19937_64& rng, int64_t seq_kv, const std::vector<int64_t>& bounds) {
  std::vector<KeyRange> ranges;
  const int64_t n = uniform(rng, 1, 4);
  auto bound = [&] {
    return static_cast<int32_t>(bounds[static_cast<size_t>(uniform(rng, 0, static_cast<int64_t>(bounds.size()) - 1))]);
  };
  for (int64_t k = 0; k < n; ++k) {
    switch (uniform(rng, 0, 4)) {
      case 0: {
        const int32_t a = bound(), b = bound();
        ranges.push_back({std::min(a, b), std::max(a, b)});
        break;
      }
      case 1: {
        const int32_t a = static_cast<int32_t>(uniform(rng, -3, seq_kv + 3));
        ranges.push_back({a, a + static_cast<int32_t>(uniform(rng, 0, seq_kv / 2))});
        break;
      }
      case 2: {
        const int32_t a = static_cast<int32_t>(uniform(rng, 0, seq_kv));
        ranges.push_back({a, a});
        break;
      }
      case 3: {
        const int32_t a = static_cast<int32_t>(uniform(rng, 0, seq_kv));
        ranges.push_back({a, a - static_cast<int32_t>(uniform(rng, 1, 5))});
        break;
      }
      default: {
        const int32_t a = bound();
        ranges.push_back({a, static_cast<int32_t>(std::min<int64_t>(seq_kv, a + uniform(rng, 1, 9)))});
        break;
      }
    }
  }
  return ranges;
}

// The row blocks a test checks for (b, h): one row, a few rows at a random place, the last rows.
std::vector<RowBlock> some_blocks(std::mt19937_64& rng, const AttentionSpec& s, int32_t b, int32_t h) {
  const int32_t sq = static_cast<int32_t>(s.seq_q);
  const int32_t few = static_cast<int32_t>(std::min<int64_t>(7, sq));
  return {{b, h, static_cast<int32_t>(uniform(rng, 0, sq - 1)), 1},
          {b, h, static_cast<int32_t>(uniform(rng, 0, sq - few)), few},
          {b, h, sq - std::min(sq, 5), std::min(sq, 5)}};
}

// The (batch, head) pairs a test checks: the first, the last and one at random.
std::vector<std::array<int32_t, 2>> some_pairs(std::mt19937_64& rng, const AttentionSpec& s) {
  const int32_t nb = static_cast<int32_t>(s.batch), nh = static_cast<int32_t>(s.heads_q);
  std::vector<std::array<int32_t, 2>> p{{0, 0}, {nb - 1, nh - 1}};
  p.push_back({static_cast<int32_t>(uniform(rng, 0, nb - 1)), static_cast<int32_t>(uniform(rng, 0, nh - 1))});
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

TEST(Reference, StatesOfEveryVariantMatchBruteForce) {
  TS_PRINTED_SEED(seed);
  std::mt19937_64 rng(seed);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name + ": " + describe(c.spec));
    const AttentionSpec& s = c.spec;
    const HeadInputs in = random_head_inputs(s, rng(), c.input_scale);
    BruteForce brute(s, in);
    const LD v_max = brute.v_max();
    const ReferenceInputs prepared(s, in, 2);
    for (const auto& [b, h] : some_pairs(rng, s)) {
      for (const RowBlock& block : some_blocks(rng, s, b, h)) {
        SCOPED_TRACE("batch " + std::to_string(b) + ", head " + std::to_string(h) + ", rows [" +
                     std::to_string(block.q_begin) + ", " + std::to_string(block.q_begin + block.rows) + ")");
        std::vector<int64_t> asked = random_boundaries(rng, s.seq_kv);
        const auto ref = compute_row_block(prepared, block, asked);
        EXPECT_EQ(ref->block(), block);
        EXPECT_EQ(ref->head_dim(), s.head_dim);

        // Boundaries: those asked, clipped, sorted, unique, with 0 and seq_kv.
        std::vector<int64_t> want_bounds{0, s.seq_kv};
        for (int64_t x : asked) want_bounds.push_back(std::clamp<int64_t>(x, 0, s.seq_kv));
        std::sort(want_bounds.begin(), want_bounds.end());
        want_bounds.erase(std::unique(want_bounds.begin(), want_bounds.end()), want_bounds.end());
        ASSERT_EQ(ref->boundaries(), want_bounds);

        // Every piece alone and every prefix.
        const auto& bs = ref->boundaries();
        for (size_t p = 0; p + 1 < bs.size(); ++p) {
          const std::vector<KeyRange> piece{{static_cast<int32_t>(bs[p]), static_cast<int32_t>(bs[p + 1])}};
          EXPECT_TRUE(state_matches(ref->state(piece), block, brute, piece, s.seq_kv, v_max));
          const std::vector<KeyRange> prefix{{0, static_cast<int32_t>(bs[p + 1])}};
          EXPECT_TRUE(state_matches(ref->state(prefix), block, brute, prefix, s.seq_kv, v_max));
        }
        // Non-adjacent pieces, overlapping ranges, a range inside one piece, ranges beyond the keys.
        const int32_t kv = static_cast<int32_t>(s.seq_kv);
        std::vector<std::vector<KeyRange>> sets = {
            {{0, kv / 5}, {kv / 2, kv - 3}},
            {{kv / 4, kv / 2}, {kv / 3, 2 * kv / 3}, {kv / 3 + 1, kv / 3 + 2}},
            {{kv / 3 + 1, kv / 3 + 4}},
            {{-10, 3}, {kv - 2, kv + 10}},
            {{5, 5}},
            {{9, 2}},
            {},
        };
        for (int k = 0; k < 8; ++k) sets.push_back(random_ranges(rng, s.seq_kv, bs));
        for (const auto& ranges : sets) {
          EXPECT_TRUE(state_matches(ref->state(ranges), block, brute, ranges, s.seq_kv, v_max));
          // Keys seen within the ranges, counted from the definition.
          const std::vector<bool> keys = keys_in(ranges, s.seq_kv);
          const std::vector<int64_t> counted = ref->visible_keys(ranges);
          for (int32_t r = 0; r < block.rows; ++r)
            EXPECT_EQ(counted[static_cast<size_t>(r)], brute.state(b, h, block.q_begin + r, keys).keys)
                << "row " << r << ", keys " << ranges_text(ranges);
        }
        const std::vector<int64_t> all_counted = ref->visible_keys();
        const RefState out = ref->output();
        EXPECT_TRUE(out.normalized);
        for (int32_t r = 0; r < block.rows; ++r) {
          const BruteForce::State want = brute.state(b, h, block.q_begin + r);
          EXPECT_EQ(all_counted[static_cast<size_t>(r)], want.keys) << "row " << r;
          EXPECT_TRUE(output_row_matches(out.m[static_cast<size_t>(r)],
                                         out.o.data() + static_cast<size_t>(r) * static_cast<size_t>(s.head_dim),
                                         s.head_dim, want, v_max))
              << "row " << r;
          EXPECT_EQ(out.l[static_cast<size_t>(r)], want.keys ? 1.0 : 0.0) << "row " << r;
        }
      }
    }
  }
}

TEST(Reference, OutputOfEveryVariantMatchesBruteForce) {
  TS_PRINTED_SEED(seed);
  std::mt19937_64 rng(seed);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name + ": " + describe(c.spec));
    const AttentionSpec& s = c.spec;
    const HeadInputs in = random_head_inputs(s, rng(), c.input_scale);
    BruteForce brute(s, in);
    const LD v_max = brute.v_max();
    const ReferenceOutput out = reference_output(s, in, 2);
    ASSERT_EQ(out.o.size(), static_cast<size_t>(s.batch * s.heads_q * s.seq_q * s.head_dim));
    ASSERT_EQ(out.lse.size(), static_cast<size_t>(s.batch * s.heads_q * s.seq_q));
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.heads_q; ++h)
        for (int64_t i = 0; i < s.seq_q; ++i) {
          const size_t row = static_cast<size_t>((b * s.heads_q + h) * s.seq_q + i);
          ASSERT_TRUE(output_row_matches(out.lse[row], out.o.data() + row * static_cast<size_t>(s.head_dim),
                                         s.head_dim, brute.state(b, h, i), v_max))
              << "batch " << b << ", head " << h << ", row " << i;
        }
  }
}

// Two references of the same rows give the same bits: the states of `count` random ranges (drawn on
// a's boundaries) and the output.
void expect_same_bits(const RowBlockReference& a, const RowBlockReference& b, std::mt19937_64& rng, int64_t seq_kv,
                      int count) {
  for (int k = 0; k < count; ++k) {
    const std::vector<KeyRange> ranges = random_ranges(rng, seq_kv, a.boundaries());
    const RefState x = a.state(ranges), y = b.state(ranges);
    EXPECT_EQ(x.m, y.m);
    EXPECT_EQ(x.l, y.l);
    EXPECT_EQ(x.o, y.o);
  }
  EXPECT_EQ(a.output().o, b.output().o);
  EXPECT_EQ(a.output().m, b.output().m);
}

// The one-off form computes with the same loops on the same doubles: the same bits.
TEST(Reference, OneOffRowBlockEqualsThePreparedOne) {
  TS_PRINTED_SEED(seed);
  std::mt19937_64 rng(seed);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name);
    const HeadInputs in = random_head_inputs(c.spec, rng(), c.input_scale);
    const ReferenceInputs prepared(c.spec, in, 1);
    for (const auto& [b, h] : some_pairs(rng, c.spec))
      for (const RowBlock& block : some_blocks(rng, c.spec, b, h)) {
        const std::vector<int64_t> bounds = random_boundaries(rng, c.spec.seq_kv);
        const auto a = compute_row_block(prepared, block, bounds);
        const auto o = compute_row_block(c.spec, in, block, bounds);
        EXPECT_GE(o->bytes(), a->bytes());
        expect_same_bits(*a, *o, rng, c.spec.seq_kv, 4);
      }
  }
}

// Consecutive row blocks computed together give each block what computing it alone gives, bit for
// bit (every row's sums in the same order), whatever the mask makes each row see; blocks that are
// not consecutive rows of one pair are refused.
TEST(Reference, RowBlocksComputedTogetherEqualEachComputedAlone) {
  TS_PRINTED_SEED(seed);
  std::mt19937_64 rng(seed);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name);
    const HeadInputs in = random_head_inputs(c.spec, rng(), c.input_scale);
    const ReferenceInputs prepared(c.spec, in, 1);
    const int32_t sq = static_cast<int32_t>(c.spec.seq_q);
    for (const auto& [b, h] : some_pairs(rng, c.spec)) {
      // Rows [first, sq) cut at random into blocks of 1 to 9 rows.
      std::vector<RowBlock> blocks;
      for (int32_t q = static_cast<int32_t>(uniform(rng, 0, sq - 1)); q < sq;) {
        const int32_t rows = std::min(sq - q, static_cast<int32_t>(uniform(rng, 1, 9)));
        blocks.push_back({b, h, q, rows});
        q += rows;
      }
      const std::vector<int64_t> bounds = random_boundaries(rng, c.spec.seq_kv);
      const auto together = compute_row_blocks(prepared, blocks, bounds);
      ASSERT_EQ(together.size(), blocks.size());
      for (size_t i = 0; i < blocks.size(); ++i) {
        const auto alone = compute_row_block(prepared, blocks[i], bounds);
        EXPECT_EQ(together[i]->block(), blocks[i]);
        EXPECT_EQ(together[i]->boundaries(), alone->boundaries());
        expect_same_bits(*together[i], *alone, rng, c.spec.seq_kv, 3);
      }
      if (blocks.size() >= 2) {
        std::vector<RowBlock> gap = {blocks[0], blocks[1]};
        gap[1].q_begin += 1;
        if (gap[1].q_begin + gap[1].rows <= sq) {
          EXPECT_THROW(compute_row_blocks(prepared, gap, bounds), std::invalid_argument);
        }
        std::vector<RowBlock> other_head = {blocks[0], blocks[1]};
        other_head[1].head = (other_head[1].head + 1) % static_cast<int32_t>(c.spec.heads_q);
        if (c.spec.heads_q > 1) {
          EXPECT_THROW(compute_row_blocks(prepared, other_head, bounds), std::invalid_argument);
        }
      }
    }
  }
  EXPECT_TRUE(compute_row_blocks(ReferenceInputs(all_cases().front().spec,
                                                 random_head_inputs(all_cases().front().spec, seed), 1),
                                 {}, {})
                  .empty());
}

// What an event of each convention stores, from event.h's definitions, against express.
TEST(Reference, ExpressGivesEveryConvention) {
  TS_PRINTED_SEED(seed);
  std::mt19937_64 rng(seed);
  const LD log2e = 1 / std::log(static_cast<LD>(2));
  for (const Case& c : all_cases()) {
    if (c.name.rfind("causal bottom-right, seq_q > seq_kv", 0) != 0 && c.name.rfind("everything", 0) != 0) continue;
    SCOPED_TRACE(c.name);
    const AttentionSpec& s = c.spec;
    const HeadInputs in = random_head_inputs(s, rng(), c.input_scale);
    BruteForce brute(s, in);
    const LD v_max = brute.v_max();
    const double scale = s.effective_scale();
    const RowBlock block{0, static_cast<int32_t>(s.heads_q - 1), 0, static_cast<int32_t>(s.seq_q)};
    const auto ref = compute_row_block(s, in, block, {s.seq_kv / 3});
    const std::vector<KeyRange> ranges{{3, static_cast<int32_t>(s.seq_kv - 4)}};
    const RefState canonical = ref->state(ranges);
    const RefState output = ref->output();
    const std::vector<bool> keys = keys_in(ranges, s.seq_kv);
    for (int32_t bits = 0; bits <= tilescope::kConventionMask; ++bits) {
      SCOPED_TRACE("convention " + std::to_string(bits));
      const bool normalized = bits & tilescope::kNormalized, base2 = bits & tilescope::kLogBase2,
                 unscaled = bits & tilescope::kUnscaledMax;
      const RefState got = express(canonical, bits, scale);
      EXPECT_EQ(got.normalized, normalized);
      for (int32_t r = 0; r < block.rows; ++r) {
        const BruteForce::State want = brute.state(block.batch, block.head, r, keys);
        const size_t row = static_cast<size_t>(r), d = static_cast<size_t>(s.head_dim);
        if (want.keys == 0) {
          EXPECT_EQ(got.m[row], -kInf);
          EXPECT_EQ(got.l[row], 0.0);
          for (size_t e = 0; e < d; ++e) EXPECT_EQ(got.o[row * d + e], 0.0);
          continue;
        }
        LD m = normalized ? want.m + std::log(want.l) : want.m;
        if (base2) m *= log2e;
        if (unscaled && !normalized) m /= static_cast<LD>(scale);
        const LD l = normalized ? 1 : want.l;
        EXPECT_TRUE(near(got.m[row], m, kRel * std::max<LD>(1, std::fabs(m))))
            << "row " << r << ": " << got.m[row] << " vs " << static_cast<double>(m);
        EXPECT_TRUE(near(got.l[row], l, kRel * l)) << "row " << r;
        for (size_t e = 0; e < d; ++e) {
          const LD o = normalized ? want.o[e] / want.l : want.o[e];
          ASSERT_TRUE(near(got.o[row * d + e], o, kRel * v_max * (normalized ? 1 : want.l)))
              << "row " << r << " col " << e;
        }
      }
      // An output can be stored in the normalised conventions only.
      if (!normalized) {
        EXPECT_THROW(express(output, bits, scale), std::invalid_argument);
        continue;
      }
      const RefState out = express(output, bits, scale);
      for (int32_t r = 0; r < block.rows; ++r) {
        const BruteForce::State want = brute.state(block.batch, block.head, r);
        const size_t row = static_cast<size_t>(r);
        if (want.keys == 0) {
          EXPECT_EQ(out.m[row], -kInf);
          EXPECT_EQ(out.l[row], 0.0);
          continue;
        }
        const LD lse = (want.m + std::log(want.l)) * (base2 ? log2e : 1);
        EXPECT_TRUE(near(out.m[row], lse, kRel * std::max<LD>(1, std::fabs(lse)))) << "row " << r;
        EXPECT_EQ(out.l[row], 1.0);
        EXPECT_EQ(out.o, output.o);
      }
    }
    // The first bit past the known ones (8 became kNoMax).
    EXPECT_THROW(express(canonical, tilescope::kConventionMask + 1, scale), std::invalid_argument);
    EXPECT_THROW(express(canonical, tilescope::kUnscaledMax, 0.0), std::invalid_argument);
  }
}

TEST(Reference, MergedStatesOfDisjointRangesAreTheStateOfTheirUnion) {
  TS_PRINTED_SEED(seed);
  std::mt19937_64 rng(seed);
  const Case c = all_cases().back();
  const HeadInputs in = random_head_inputs(c.spec, rng(), c.input_scale);
  const RowBlock block{0, 1, 3, 30};
  const auto ref = compute_row_block(c.spec, in, block, {40, 80});
  const std::vector<KeyRange> a{{0, 40}}, b{{41, 100}}, both{{0, 40}, {41, 100}};
  RefState merged = ref->state(a);
  merge_states(merged, ref->state(b));
  const RefState want = ref->state(both);
  for (size_t r = 0; r < want.m.size(); ++r) {
    EXPECT_EQ(merged.m[r], want.m[r]);
    EXPECT_NEAR(merged.l[r], want.l[r], kRel * want.l[r]);
  }
  for (size_t e = 0; e < want.o.size(); ++e) EXPECT_NEAR(merged.o[e], want.o[e], 1e-11);
  RefState normalised = ref->output();
  EXPECT_THROW(merge_states(merged, normalised), std::invalid_argument);
  RefState other_shape = ref->state(a);
  other_shape.rows = 2;
  EXPECT_THROW(merge_states(merged, other_shape), std::invalid_argument);
}

TEST(Reference, RejectsRowBlocksAndInputsThatDoNotFit) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = base_spec(2, 4, 2, 20, 30, 24, DType::bf16);
  const HeadInputs in = random_head_inputs(s, seed);
  const ReferenceInputs prepared(s, in, 1);
  for (const RowBlock& bad : {RowBlock{2, 0, 0, 1}, RowBlock{0, 4, 0, 1}, RowBlock{-1, 0, 0, 1}, RowBlock{0, 0, -1, 2},
                              RowBlock{0, 0, 15, 6}, RowBlock{0, 0, 0, 0}}) {
    EXPECT_THROW(compute_row_block(prepared, bad, {}), std::invalid_argument);
    EXPECT_THROW(compute_row_block(s, in, bad, {}), std::invalid_argument);
  }
  // Pairs the inputs lack: the query rows of (1, 3); the keys of (1, kv head 1), which query
  // heads 2 and 3 of batch 1 read.
  HeadInputs some = random_head_inputs(s, seed + 1, {{0, 0}, {1, 2}}, {{0, 0}, {1, 0}});
  const ReferenceInputs some_prepared(s, some, 1);
  EXPECT_THROW(compute_row_block(some_prepared, {1, 3, 0, 1}, {}), std::invalid_argument);
  EXPECT_THROW(compute_row_block(some_prepared, {1, 2, 0, 1}, {}), std::invalid_argument);
  EXPECT_NO_THROW(compute_row_block(some_prepared, {0, 0, 0, 1}, {}));
  EXPECT_THROW(reference_output(s, some), std::invalid_argument);

  // Inputs that do not fit the spec: shape, dtype, a pair outside it or listed twice, bytes.
  auto rejected = [&](const HeadInputs& x) {
    EXPECT_THROW(ReferenceInputs(s, x, 1), std::invalid_argument);
    EXPECT_THROW(compute_row_block(s, x, {0, 0, 0, 1}, {}), std::invalid_argument);
    EXPECT_THROW(reference_output(s, x, 1), std::invalid_argument);
  };
  AttentionSpec longer = s;
  longer.seq_kv = 31;
  rejected(random_head_inputs(longer, seed));
  AttentionSpec wider = s;
  wider.head_dim = 32;
  rejected(random_head_inputs(wider, seed));
  AttentionSpec fp16 = s;
  fp16.dtype = DType::f16;
  rejected(random_head_inputs(fp16, seed));
  HeadInputs outside = in;
  outside.kv_pairs.back() = {1, 2};
  rejected(outside);
  HeadInputs twice = in;
  twice.q_pairs[1] = twice.q_pairs[0];
  rejected(twice);
  HeadInputs short_bytes = in;
  short_bytes.v.bytes.pop_back();
  rejected(short_bytes);
  // An invalid spec.
  AttentionSpec bad = s;
  bad.heads_kv = 3;
  EXPECT_THROW(compute_row_block(bad, in, {0, 0, 0, 1}, {}), ConfigError);
  EXPECT_THROW(ReferenceInputs(bad, in), ConfigError);
}

TEST(Reference, OutputHoldsThePairsOfTheInputsOnly) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = base_spec(2, 4, 2, 9, 30, 24, DType::f32);
  const HeadInputs some = random_head_inputs(s, seed, {{1, 2}, {0, 1}}, {{1, 1}, {0, 0}});
  BruteForce brute(s, some);
  const ReferenceOutput out = reference_output(s, some);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads_q; ++h) {
      const bool held = some.q_index(b, h) >= 0;
      for (int64_t i = 0; i < s.seq_q; ++i) {
        const size_t row = static_cast<size_t>((b * s.heads_q + h) * s.seq_q + i);
        if (held) {
          EXPECT_TRUE(
              output_row_matches(out.lse[row], out.o.data() + row * 24, 24, brute.state(b, h, i), brute.v_max()));
        } else {
          EXPECT_EQ(out.lse[row], -kInf);
          for (size_t e = 0; e < 24; ++e) EXPECT_EQ(out.o[row * 24 + e], 0.0);
        }
      }
    }
}

// Float32 values read in place (an inputs owner given) give the same states, bit for bit, as
// values copied; the row blocks keep the owner's inputs alive after every other holder let go;
// and a narrower dtype, which must be converted, is converted whether or not an owner is given.
TEST(Reference, ValuesReadInPlaceGiveTheSameStates) {
  TS_PRINTED_SEED(seed);
  for (DType dt : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(std::string(to_string(dt)));
    const AttentionSpec s = base_spec(2, 3, 1, 5, 300, 48, dt);
    auto held = std::make_shared<HeadInputs>(random_head_inputs(s, seed));
    const HeadInputs copy = *held;
    const ReferenceInputs copied(s, copy, 1);
    const ReferenceInputs in_place(s, *held, 1, held);
    const RowBlock block{1, 2, 0, 5};
    const std::vector<int64_t> cuts = {37, 150, 151, 299};
    const auto want = compute_row_block(copied, block, cuts);
    std::weak_ptr<const HeadInputs> watch = held;
    held.reset();  // the reference's keys hold it now
    EXPECT_EQ(watch.expired(), dt != DType::f32) << "held only where values are read in place";
    const auto got = compute_row_block(in_place, block, cuts);
    for (const auto& ranges : std::vector<std::vector<KeyRange>>{{{0, 300}}, {{37, 150}}, {{10, 200}}, {{151, 299}}}) {
      const RefState a = want->state(ranges), b = got->state(ranges);
      EXPECT_EQ(a.m, b.m);
      EXPECT_EQ(a.l, b.l);
      EXPECT_EQ(a.o, b.o);
    }
    float k0[300 * 48], v0[300 * 48], k1[300 * 48], v1[300 * 48];
    copied.copy_keys(1, k0, v0);
    in_place.copy_keys(1, k1, v1);
    EXPECT_EQ(std::memcmp(v0, v1, sizeof v0), 0);
    EXPECT_EQ(std::memcmp(k0, k1, sizeof k0), 0);
  }
}

// bytes(): the pieces and prefixes (pieces x rows x head_dim doubles each), and the keys a
// one-off row block converted for itself (K and V, float32).
TEST(Reference, BytesCountTheStatesAndTheKeysHeld) {
  TS_PRINTED_SEED(seed);
  AttentionSpec s = base_spec(1, 1, 1, 64, 256, 64, DType::bf16);
  const HeadInputs in = random_head_inputs(s, seed);
  const ReferenceInputs prepared(s, in, 1);
  const RowBlock block{0, 0, 0, 16};
  const auto ref = compute_row_block(prepared, block, {64, 128, 192});
  const size_t states = 2 * 4 * 16 * (64 + 2) * sizeof(double);
  EXPECT_GE(ref->bytes(), states);
  EXPECT_LT(ref->bytes(), states + 16 * 64 * sizeof(double) + 4096);
  const auto one_off = compute_row_block(s, in, block, {64, 128, 192});
  EXPECT_GE(one_off->bytes(), ref->bytes() + 2 * 256 * 64 * sizeof(float));
  EXPECT_GE(prepared.bytes(), 2 * 256 * 64 * sizeof(float));
}

}  // namespace
}  // namespace ts
