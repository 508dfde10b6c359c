// Tiling: tile shapes, split ranges, causal visits, the Split-K heuristic, JSON round trips.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kernels/tiling.h"

namespace ts {
namespace {

AttentionConfig config(KernelKind kernel, int64_t sq, int64_t skv, int64_t d, bool causal = false,
                       int64_t splits = 0) {
  AttentionConfig c;
  c.kernel = kernel;
  c.seq_q = sq;
  c.seq_kv = skv;
  c.head_dim = d;
  c.causal = causal;
  c.num_splits = kernel == KernelKind::splitk ? splits : 0;
  return c;
}

TEST(Tiling, TileCountsCoverEverySequenceExactly) {
  for (int64_t d : {32, 64, 128, 256})
    for (int64_t s : {1, 7, 64, 65, 128, 1000}) {
      for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
        const Tiling t = make_tiling(config(k, s, s + 3, d), 132);
        EXPECT_GE(int64_t{t.num_q_tiles} * t.block_m, s);
        EXPECT_LT(int64_t{t.num_q_tiles - 1} * t.block_m, s);
        EXPECT_GE(int64_t{t.num_kv_tiles} * t.block_n, s + 3);
        EXPECT_LT(int64_t{t.num_kv_tiles - 1} * t.block_n, s + 3);
        int64_t rows = 0;
        for (int32_t q = 0; q < t.num_q_tiles; ++q) rows += t.rows_in_q_tile(q);
        EXPECT_EQ(rows, s);
      }
    }
}

TEST(Tiling, DecodeUsesOneQueryRowPerTile) {
  const Tiling t = make_tiling(config(KernelKind::splitk, 1, 32768, 128), 132);
  EXPECT_EQ(t.block_m, 1);
  EXPECT_EQ(t.num_q_tiles, 1);
  EXPECT_EQ(t.block_n * 128, 8192);
}

TEST(Tiling, SplitsPartitionTheKvTilesInOrder) {
  for (int64_t splits : {1, 2, 3, 7, 8, 20, 64}) {
    const Tiling t = make_tiling(config(KernelKind::splitk, 5, 1000, 64, false, splits), 132);
    ASSERT_EQ(t.num_splits, splits);
    int32_t next = 0;
    for (int32_t s = 0; s < t.num_splits; ++s) {
      const KvTileRange r = t.split_kv_tiles(s);
      EXPECT_EQ(r.begin, std::min(next, t.num_kv_tiles)) << "split " << s;
      EXPECT_LE(r.end, t.num_kv_tiles);
      next = std::max(next, r.end);
      if (r.empty()) {
        EXPECT_EQ(r.begin, t.num_kv_tiles) << "only trailing splits may be empty";
      }
    }
    EXPECT_EQ(next, t.num_kv_tiles) << "every kv tile belongs to a split";
  }
  // More splits than kv tiles: the extra ones are empty.
  const Tiling t = make_tiling(config(KernelKind::splitk, 1, 100, 64, false, 8), 132);
  EXPECT_EQ(t.num_kv_tiles, 1);
  EXPECT_FALSE(t.split_kv_tiles(0).empty());
  for (int s = 1; s < 8; ++s) EXPECT_TRUE(t.split_kv_tiles(s).empty());
}

// The tiles a causal query tile visits end exactly after the tile of the last key any of its
// rows sees (computed here row by row).
TEST(Tiling, CausalVisitsEndAtTheLastVisibleKey) {
  for (auto [sq, skv] : {std::pair<int64_t, int64_t>{64, 64}, {65, 200}, {200, 65}, {1, 1000},
                         {1000, 7}, {7, 1000}}) {
    const Tiling t = make_tiling(config(KernelKind::fa1, sq, skv, 64, true), 132);
    for (int32_t q = 0; q < t.num_q_tiles; ++q) {
      int64_t last_key = -1;
      for (int64_t i = int64_t{q} * t.block_m; i < int64_t{q} * t.block_m + t.rows_in_q_tile(q); ++i)
        last_key = std::max(last_key, std::min(skv - 1, i + skv - sq));
      const int32_t expected = last_key < 0 ? 0 : static_cast<int32_t>(last_key / t.block_n + 1);
      EXPECT_EQ(t.kv_tiles_visited(q).end, expected) << sq << "x" << skv << " q_tile " << q;
    }
    const Tiling nc = make_tiling(config(KernelKind::fa1, sq, skv, 64, false), 132);
    EXPECT_EQ(nc.kv_tiles_visited(0).end, nc.num_kv_tiles);
  }
}

TEST(Tiling, HeuristicKeepsOneSplitWhenBlocksFillTheDevice) {
  // B=8, H=32 decode: 256 blocks on 132 SMs x 2 resident already.
  EXPECT_EQ(make_tiling([] {
              auto c = config(KernelKind::splitk, 1, 32768, 128);
              c.batch = 8;
              c.heads = 32;
              return c;
            }(),
                        132)
                .num_splits,
            1);
}

TEST(Tiling, HeuristicSplitsASmallDecodeWithoutEmptySplits) {
  for (int sms : {1, 8, 108, 132})
    for (int64_t skv : {64, 1000, 4096, 32768}) {
      auto c = config(KernelKind::splitk, 1, skv, 128);
      c.heads = 4;
      const Tiling t = make_tiling(c, sms);
      EXPECT_GE(t.num_splits, 1);
      EXPECT_LE(t.num_splits, std::min(128, t.num_kv_tiles));
      for (int s = 0; s < t.num_splits; ++s)
        EXPECT_FALSE(t.split_kv_tiles(s).empty()) << "heuristic chose an empty split: sms " << sms
                                                   << " skv " << skv << " splits " << t.num_splits;
      if (t.num_kv_tiles >= 16 && sms >= 8) {
        EXPECT_GT(t.num_splits, 1) << "4 blocks on " << sms << " SMs";
      }
    }
  // The chosen count fills the waves of blocks well: 4 heads x n splits on 132 x 2 slots.
  auto c = config(KernelKind::splitk, 1, 32768, 128);
  c.heads = 4;
  const int n = make_tiling(c, 132).num_splits;
  const double waves = 4.0 * n / 264.0;
  EXPECT_GE(waves / std::ceil(waves), 0.8);
}

TEST(Tiling, GivenSplitsAreKeptAndFa1HasOne) {
  EXPECT_EQ(make_tiling(config(KernelKind::splitk, 64, 640, 64, false, 3), 132).num_splits, 3);
  EXPECT_EQ(make_tiling(config(KernelKind::fa1, 64, 640, 64), 132).num_splits, 1);
  EXPECT_THROW(make_tiling(config(KernelKind::fa1, 64, 640, 64), 0), ConfigError);
  EXPECT_THROW(make_tiling(config(KernelKind::fa1, 64, 640, 48), 132), ConfigError);
}

TEST(Tiling, JsonRoundTripAndHostileFields) {
  const Tiling t = make_tiling(config(KernelKind::splitk, 65, 1000, 128, true, 3), 132);
  nlohmann::json j = t;
  EXPECT_EQ(j.get<Tiling>(), t);
  for (const char* key : {"block_m", "num_q_tiles", "num_kv_tiles", "kv_tiles_per_split", "seq_q"}) {
    nlohmann::json bad = j;
    bad[key] = bad[key].get<int64_t>() * 2 + 17;  // inconsistent with the other fields
    EXPECT_THROW(bad.get<Tiling>(), ConfigError) << key;
    bad[key] = "seven";
    EXPECT_THROW(bad.get<Tiling>(), ConfigError) << key;
    bad.erase(key);
    EXPECT_THROW(bad.get<Tiling>(), ConfigError) << key;
  }
  nlohmann::json bad = j;
  bad["block_n"] = -4;
  EXPECT_THROW(bad.get<Tiling>(), ConfigError);
  EXPECT_THROW(nlohmann::json::array().get<Tiling>(), ConfigError);
}

}  // namespace
}  // namespace ts
