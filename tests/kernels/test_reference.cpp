// The float64 reference against a direct computation written here independently (all keys of
// a row at once, two passes), for final outputs and for the intermediate states of any kv
// range; and the naive same-precision attention's character.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/naive_attention.h"
#include "base/random_inputs.h"
#include "kernels/reference.h"
#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Unnormalised state of query row i over keys [j_begin, j_end) (visible ones), directly.
struct Direct {
  double m = -kInf, l = 0;
  std::vector<double> o;
};
Direct direct_state(const AttentionConfig& c, const AttentionInputs& in, int64_t b, int64_t h,
                    int64_t i, int64_t j_begin, int64_t j_end) {
  const int64_t d = c.head_dim, bh = b * c.heads + h;
  Direct st;
  st.o.assign(static_cast<size_t>(d), 0.0);
  std::vector<double> s;
  std::vector<int64_t> keys;
  for (int64_t j = j_begin; j < std::min(j_end, c.seq_kv); ++j) {
    if (c.causal && j > i + c.seq_kv - c.seq_q) continue;
    double dot = 0;
    for (int64_t e = 0; e < d; ++e)
      dot += double(in.q.get_float((bh * c.seq_q + i) * d + e)) *
             in.k.get_float((bh * c.seq_kv + j) * d + e);
    s.push_back(dot * c.effective_scale());
    keys.push_back(j);
  }
  for (double x : s) st.m = std::max(st.m, x);
  for (size_t n = 0; n < s.size(); ++n) {
    const double p = std::exp(s[n] - st.m);
    st.l += p;
    for (int64_t e = 0; e < d; ++e) st.o[e] += p * in.v.get_float((bh * c.seq_kv + keys[n]) * d + e);
  }
  return st;
}

AttentionConfig cfg(KernelKind k, int64_t sq, int64_t skv, int64_t d, bool causal, DType dt,
                    int64_t splits = 0) {
  AttentionConfig c;
  c.kernel = k;
  c.batch = 2;
  c.heads = 2;
  c.seq_q = sq;
  c.seq_kv = skv;
  c.head_dim = d;
  c.causal = causal;
  c.dtype = dt;
  c.num_splits = splits;
  return c;
}

void expect_state_near(const RefState& got, int row, const Direct& want, double tol,
                       const std::string& what) {
  if (want.l == 0) {
    EXPECT_EQ(got.m[row], -kInf) << what;
    EXPECT_EQ(got.l[row], 0.0) << what;
  } else {
    EXPECT_NEAR(got.m[row], want.m, tol * std::max(1.0, std::abs(want.m))) << what;
    EXPECT_NEAR(got.l[row], want.l, tol * want.l) << what;
  }
  for (int e = 0; e < got.head_dim; ++e)
    EXPECT_NEAR(got.o[row * got.head_dim + e], want.o[e], tol * std::max(1.0, want.l)) << what;
}

TEST(Reference, FinalOutputMatchesDirectAttention) {
  for (auto [sq, skv, causal] : {std::tuple<int64_t, int64_t, bool>{65, 130, false},
                                 {65, 130, true}, {130, 65, true}, {1, 200, true}, {7, 7, true}}) {
    const AttentionConfig c = cfg(KernelKind::fa1, sq, skv, 32, causal, DType::bf16);
    const AttentionInputs in = make_random_inputs(c, {.seed = uint64_t(sq * 1000 + skv)});
    const Reference ref(c, make_tiling(c, 132), in);
    const Reference::Output out = ref.output(2);
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t i = 0; i < sq; ++i) {
          const Direct d = direct_state(c, in, b, h, i, 0, skv);
          const int64_t row = (b * c.heads + h) * sq + i;
          if (d.l == 0) {
            EXPECT_EQ(out.lse[row], -kInf);
            for (int e = 0; e < 32; ++e) EXPECT_EQ(out.o[row * 32 + e], 0.0);
            continue;
          }
          EXPECT_NEAR(out.lse[row], d.m + std::log(d.l), 1e-12 * std::abs(d.m) + 1e-12);
          for (int e = 0; e < 32; ++e) EXPECT_NEAR(out.o[row * 32 + e], d.o[e] / d.l, 1e-12);
        }
    // The whole output agrees with the per-tile final states too.
    const auto t = ref.tile(1, 1, 0);
    const RefState f = t->final_output();
    EXPECT_EQ(f.convention, Convention::normalized);
    for (int r = 0; r < f.rows; ++r) {
      const int64_t row = (1 * c.heads + 1) * sq + r;
      EXPECT_EQ(f.m[r], out.lse[row]);
      EXPECT_EQ(f.l[r], 1.0);
    }
  }
}

TEST(Reference, EveryKvRangeStateMatchesDirectState) {
  const AttentionConfig c = cfg(KernelKind::splitk, 33, 300, 64, true, DType::f16, 3);
  const AttentionInputs in = make_random_inputs(c, {.seed = 7});
  const Tiling tiling = make_tiling(c, 132);
  const Reference ref(c, tiling, in);
  ASSERT_GT(tiling.num_kv_tiles, 2);
  for (int32_t qt = 0; qt < tiling.num_q_tiles; ++qt) {
    const auto tile = ref.tile(1, 0, qt);
    for (int32_t begin = 0; begin <= tiling.num_kv_tiles; ++begin)
      for (int32_t end = begin; end <= tiling.num_kv_tiles; ++end) {
        const RefState st = tile->kv_range(begin, end);
        for (int r = 0; r < st.rows; ++r) {
          const int64_t i = int64_t{qt} * tiling.block_m + r;
          expect_state_near(st, r,
                            direct_state(c, in, 1, 0, i, int64_t{begin} * tiling.block_n,
                                         int64_t{end} * tiling.block_n),
                            1e-12, "tiles [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
        }
      }
    EXPECT_THROW(tile->kv_range(2, 1), std::out_of_range);
    EXPECT_THROW(tile->kv_range(0, tiling.num_kv_tiles + 1), std::out_of_range);
  }
}

TEST(Reference, ExpectedFollowsTheEventsCoordinates) {
  const AttentionConfig c = cfg(KernelKind::splitk, 20, 500, 32, false, DType::f32, 4);
  const AttentionInputs in = make_random_inputs(c, {.seed = 3});
  const Tiling t = make_tiling(c, 132);
  const Reference ref(c, t, in);
  EventHeader h{};
  h.stage = static_cast<int32_t>(Stage::splitk_reduce);
  h.batch = 1;
  h.head = 1;
  h.q_tile = 1;
  h.kv_tile_begin = 0;
  h.kv_tile_end = t.split_kv_tiles(1).end;
  const RefState merged = ref.expected(h);
  // Merging the reference's split states 0 and 1 gives the same state.
  RefState m01 = ref.tile(1, 1, 1)->kv_range(t.split_kv_tiles(0).begin, t.split_kv_tiles(0).end);
  merge_states(m01, ref.tile(1, 1, 1)->kv_range(t.split_kv_tiles(1).begin, t.split_kv_tiles(1).end));
  for (int r = 0; r < merged.rows; ++r) {
    EXPECT_NEAR(merged.m[r], m01.m[r], 1e-12);
    EXPECT_NEAR(merged.l[r], m01.l[r], 1e-9 * m01.l[r]);
  }
  h.stage = static_cast<int32_t>(Stage::final_output);
  EXPECT_EQ(ref.expected(h).convention, Convention::normalized);
  h.q_tile = t.num_q_tiles;
  EXPECT_THROW(ref.expected(h), std::out_of_range);
}

TEST(Reference, RejectsATilingOfAnotherConfig) {
  const AttentionConfig c = cfg(KernelKind::fa1, 20, 50, 32, false, DType::f32);
  const AttentionInputs in = make_random_inputs(c, {.seed = 1});
  AttentionConfig other = c;
  other.seq_kv = 51;
  EXPECT_THROW(Reference(c, make_tiling(other, 132), in), ConfigError);
}

TEST(Naive, ErrorGrowsAsPrecisionDrops) {
  AttentionConfig c = cfg(KernelKind::fa1, 64, 200, 64, false, DType::f32);
  double err[3];
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    c.dtype = dt;
    const AttentionInputs in = make_random_inputs(c, {.seed = 11});
    const Reference ref(c, make_tiling(c, 132), in);
    const NaiveOutput naive = naive_attention(c, in);
    err[static_cast<int>(dt)] = test::max_abs_error(naive.o.to_double(), ref.output().o);
  }
  EXPECT_GT(err[0], 0.0);
  EXPECT_LT(err[0], 1e-5);
  EXPECT_LT(err[0] * 20, err[1]);
  EXPECT_LT(err[1], err[2]);
  EXPECT_LT(err[2], 0.05);
}

TEST(Naive, RowsThatSeeNoKeyGiveZeroAndMinusInfinity) {
  const AttentionConfig c = cfg(KernelKind::fa1, 10, 4, 32, true, DType::f16);
  const AttentionInputs in = make_random_inputs(c, {.seed = 5});
  const NaiveOutput naive = naive_attention(c, in);
  // Query i sees keys j <= i - 6: rows 0..5 see none.
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(std::isinf(naive.lse[i]) && naive.lse[i] < 0, i < 6) << i;
    if (i < 6) {
      for (int e = 0; e < 32; ++e) EXPECT_EQ(naive.o.get_float(i * 32 + e), 0.0f);
    }
  }
}

}  // namespace
}  // namespace ts
