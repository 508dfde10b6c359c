// The correct kernels' intermediate states agree with the tile-exact reference: FA-1's running
// state after every kv tile and Split-K's reduce steps (through trace events), Split-K's
// partial buffers (through the launcher), and every event's header says where it was.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

AttentionConfig cfg(KernelKind k, DType dt, int64_t d, int64_t sq, int64_t skv, bool causal,
                    int64_t splits = 0) {
  AttentionConfig c;
  c.kernel = k;
  c.dtype = dt;
  c.head_dim = d;
  c.batch = 2;
  c.heads = 2;
  c.seq_q = sq;
  c.seq_kv = skv;
  c.causal = causal;
  c.num_splits = k == KernelKind::splitk ? splits : 0;
  return c;
}

// fp32 arithmetic on the kernel side vs float64: the relative error of a state.
constexpr double kStateTol = 2e-5;

TEST(KernelStates, Fa1StepsFollowTheReferenceTileByTile) {
  for (DType dt : {DType::f32, DType::bf16}) {
    const AttentionConfig c = cfg(KernelKind::fa1, dt, 64, 130, 200, true);
    const test::Run run = test::run_config(c, test::backend_under_test(), 21, true, 2);
    const Reference ref(c, run.out.tiling, run.inputs);
    const CapturedEvents& ev = run.out.events;
    ASSERT_EQ(ev.dropped, 0u);
    ASSERT_EQ(ev.size(), ev.requested);
    const Tiling& t = run.out.tiling;
    // Every block: one fa1.step per visited kv tile, numbered 0.., then its final event.
    size_t i = 0;
    for (int32_t b = 0; b < c.batch; ++b)
      for (int32_t h = 0; h < c.heads; ++h)
        for (int32_t q = 0; q < t.num_q_tiles; ++q) {
          const int32_t steps = t.kv_tiles_visited(q).end;
          for (int32_t j = 0; j <= steps; ++j, ++i) {
            ASSERT_LT(i, ev.size());
            const EventHeader& e = ev.headers[i];
            const bool is_final = j == steps;
            EXPECT_EQ(e.stage, int32_t(is_final ? Stage::final_output : Stage::fa1_step));
            EXPECT_EQ(e.convention, int32_t(is_final ? Convention::normalized : Convention::unnormalized));
            EXPECT_EQ(e.batch, b);
            EXPECT_EQ(e.head, h);
            EXPECT_EQ(e.q_tile, q);
            EXPECT_EQ(e.step, is_final ? 0 : j);
            EXPECT_EQ(e.rows, t.rows_in_q_tile(q));
            EXPECT_EQ(e.split, -1);
            EXPECT_EQ(e.block, (b * c.heads + h) * t.num_q_tiles + q);
            if (!is_final) {
              EXPECT_EQ(e.kv_tile_begin, 0);
              EXPECT_EQ(e.kv_tile_end, j + 1);
            }
            const test::EventError err = test::event_error(ev, i, ref);
            const double tol = is_final && dt == DType::bf16 ? 8e-3 : kStateTol;  // O rounded to bf16
            EXPECT_LE(err.max(), tol) << "event " << i << " step " << e.step << " m " << err.m
                                      << " l " << err.l << " o " << err.o;
          }
        }
    EXPECT_EQ(i, ev.size());
  }
}

TEST(KernelStates, SplitkPartialBuffersFollowTheReferenceSplitBySplit) {
  for (int64_t splits : {1, 3, 5}) {
    const AttentionConfig c = cfg(KernelKind::splitk, DType::f16, 128, 40, 300, true, splits);
    const test::Run run = test::run_config(c, test::backend_under_test(), 22 + splits, false, 2);
    const Reference ref(c, run.out.tiling, run.inputs);
    const Tiling& t = run.out.tiling;
    const int64_t d = c.head_dim;
    ASSERT_EQ(run.out.partial_m.size(), size_t(c.batch * c.heads * c.seq_q * splits));
    ASSERT_EQ(run.out.partial_o.size(), run.out.partial_m.size() * size_t(d));
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t q = 0; q < c.seq_q; ++q) {
          const auto tile = ref.tile(b, h, q / t.block_m);
          const int r = int(q % t.block_m);
          for (int32_t s = 0; s < t.num_splits; ++s) {
            const KvTileRange range = t.split_kv_tiles(s);
            const RefState want = tile->kv_range(range.begin, range.end);
            const size_t row = size_t(((b * c.heads + h) * c.seq_q + q) * splits + s);
            const float m = run.out.partial_m[row], l = run.out.partial_l[row];
            if (want.l[r] == 0) {  // the split sees no key of this query
              EXPECT_EQ(m, -INFINITY);
              EXPECT_EQ(l, 0.0f);
            } else {
              EXPECT_NEAR(m, want.m[r], kStateTol * std::max(1.0, std::abs(want.m[r])));
              EXPECT_NEAR(l, want.l[r], kStateTol * want.l[r]);
            }
            for (int64_t e = 0; e < d; ++e)
              ASSERT_NEAR(run.out.partial_o[row * d + e], want.o[r * d + e],
                          kStateTol * std::max(1.0, want.l[r]))
                  << "b" << b << " h" << h << " q" << q << " split " << s << " col " << e;
          }
        }
  }
}

TEST(KernelStates, SplitkEventsFollowTheReference) {
  // 8 splits over 5 kv tiles: 3 empty splits; causal with seq_q > seq_kv: rows that see nothing.
  const AttentionConfig c = cfg(KernelKind::splitk, DType::f32, 64, 330, 300, true, 8);
  const test::Run run = test::run_config(c, test::backend_under_test(), 23, true, 2);
  const Reference ref(c, run.out.tiling, run.inputs);
  const CapturedEvents& ev = run.out.events;
  const Tiling& t = run.out.tiling;
  ASSERT_EQ(ev.dropped, 0u);
  // Partial pass: one event per (q tile, split) block, empty splits included; then per q-tile
  // reduce block, a reduce event per split then the final event.
  const size_t partial_blocks = size_t(c.batch * c.heads * t.num_q_tiles * t.num_splits);
  const size_t reduce_events = size_t(c.batch * c.heads * t.num_q_tiles * (t.num_splits + 1));
  ASSERT_EQ(ev.size(), partial_blocks + reduce_events);
  std::map<int32_t, int> per_stage;
  for (size_t i = 0; i < ev.size(); ++i) {
    const EventHeader& e = ev.headers[i];
    ++per_stage[e.stage];
    if (i < partial_blocks) {
      EXPECT_EQ(e.stage, int32_t(Stage::splitk_partial));
      const KvTileRange r = t.split_kv_tiles(e.split);
      EXPECT_EQ(e.kv_tile_begin, r.begin);
      EXPECT_EQ(e.kv_tile_end, r.end);
      EXPECT_EQ(e.step, 0);
    } else if (e.stage == int32_t(Stage::splitk_reduce)) {
      EXPECT_EQ(e.step, e.split);
      EXPECT_EQ(e.kv_tile_end, t.split_kv_tiles(e.split).end);
    }
    const test::EventError err = test::event_error(ev, i, ref);
    EXPECT_LE(err.max(), kStateTol) << "event " << i << " stage " << kStageNames[e.stage] << " split "
                                    << e.split << " q_tile " << e.q_tile;
  }
  EXPECT_EQ(per_stage[int32_t(Stage::final_output)], c.batch * c.heads * t.num_q_tiles);
}

TEST(KernelStates, FinalEventsEqualTheLaunchersOutput) {
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = cfg(k, DType::bf16, 32, 70, 90, true, 2);
    const test::Run run = test::run_config(c, test::backend_under_test(), 24, true, 2);
    const CapturedEvents& ev = run.out.events;
    int finals = 0;
    for (size_t i = 0; i < ev.size(); ++i) {
      const EventHeader& e = ev.headers[i];
      if (e.stage != int32_t(Stage::final_output)) continue;
      ++finals;
      for (int r = 0; r < e.rows; ++r) {
        const int64_t row = (int64_t(e.batch) * c.heads + e.head) * c.seq_q +
                            int64_t(e.q_tile) * ev.block_m + r;
        EXPECT_EQ(ev.m[i * ev.block_m + r], run.out.lse[row]);  // bit for bit, -inf too
        EXPECT_EQ(ev.l[i * ev.block_m + r], 1.0f);
        for (int64_t col = 0; col < c.head_dim; ++col)
          ASSERT_EQ(ev.o[(i * ev.block_m + r) * c.head_dim + col], run.out.o.get_float(row * c.head_dim + col));
      }
      // Rows past the tile's valid rows were never written: still the launcher's NaN poison.
      for (int r = e.rows; r < ev.block_m; ++r) EXPECT_TRUE(std::isnan(ev.m[i * ev.block_m + r]));
    }
    EXPECT_EQ(finals, c.batch * c.heads * run.out.tiling.num_q_tiles);
  }
}

TEST(KernelStates, ProbesDoNotChangeTheResult) {
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = cfg(k, DType::f16, 64, 100, 150, true, 3);
    const test::Run plain = test::run_config(c, test::backend_under_test(), 25, false, 1);
    const test::Run traced = test::run_config(c, test::backend_under_test(), 25, true, 1);
    if (test::testing_cpu()) {  // the same arithmetic, bit for bit
      EXPECT_EQ(plain.out.o.bytes, traced.out.o.bytes);
      EXPECT_EQ(plain.out.lse, traced.out.lse);
    } else {  // nvcc may contract the two builds' arithmetic differently: a last-bit difference
      EXPECT_LE(test::max_abs_error(plain.out.o.to_double(), traced.out.o.to_double()), 2e-3);
      EXPECT_LE(test::max_abs_error(test::to_double(plain.out.lse), test::to_double(traced.out.lse)), 1e-5);
    }
    EXPECT_TRUE(plain.out.events.headers.empty());
    EXPECT_FALSE(traced.out.events.headers.empty());
  }
}

}  // namespace
}  // namespace ts
