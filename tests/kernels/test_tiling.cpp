// Tiling: tile shapes, split ranges, the tiles visited under the causal and window masks (and the
// mask itself against the spec's rule, key by key), the Split-K heuristic, JSON round trips; the
// config's GQA, window and softcap fields.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/kernel_list.h"
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
  for (const KernelBuild& b : kernel_builds())  // every kernel, dtype and head dim built
    for (int64_t s : {1, 7, 64, 65, 128, 1000}) {
      AttentionConfig c = config(b.kernel, s, s + 3, b.head_dim);
      c.dtype = b.dtype;
      const Tiling t = make_tiling(c, 132);
      EXPECT_GE(int64_t{t.num_q_tiles} * t.block_m, s);
      EXPECT_LT(int64_t{t.num_q_tiles - 1} * t.block_m, s);
      EXPECT_GE(int64_t{t.num_kv_tiles} * t.block_n, s + 3);
      EXPECT_LT(int64_t{t.num_kv_tiles - 1} * t.block_n, s + 3);
      int64_t rows = 0;
      for (int32_t q = 0; q < t.num_q_tiles; ++q) rows += t.rows_in_q_tile(q);
      EXPECT_EQ(rows, s);
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

// Which keys row i sees, key by key, as base/attention_spec.h states the rule (bottom-right
// diagonal d = i + seq_kv - seq_q; a bound of -1: none): a literal restatement the shared rule
// (base/attention_rules.h) is held to.
bool sees(const AttentionConfig& c, int64_t i, int64_t j) {
  const int64_t d = i + c.seq_kv - c.seq_q;
  return j >= 0 && j < c.seq_kv && (!c.causal || j <= d) && (c.window_left < 0 || j >= d - c.window_left) &&
         (c.window_right < 0 || j <= d + c.window_right);
}

// Windows of every kind: none, left only, right only, both, zero-width, wider than the keys;
// with and without causal; seq_q below, equal to and above seq_kv.
std::vector<AttentionConfig> masked_configs(KernelKind kernel) {
  std::vector<AttentionConfig> out;
  for (auto [sq, skv] : {std::pair<int64_t, int64_t>{1, 300}, {70, 70}, {130, 300}, {300, 130}, {9, 1000}})
    for (auto [left, right] : {std::pair<int64_t, int64_t>{-1, -1}, {0, -1}, {40, -1}, {-1, 0}, {-1, 17}, {10, 3},
                               {0, 0}, {2000, 2000}, {129, 64}})
      for (bool causal : {false, true}) {
        AttentionConfig c = config(kernel, sq, skv, 32, causal, kernel == KernelKind::splitk ? 4 : 0);
        c.window_left = left;
        c.window_right = right;
        out.push_back(c);
      }
  return out;
}

TEST(KernelMask, EveryRowSeesExactlyTheKeysTheSpecSays) {
  for (const AttentionConfig& c : masked_configs(KernelKind::fa1)) {
    const Tiling t = make_tiling(c, 132);
    const KernelMask mask = t.mask();
    const AttentionSpec spec = attention_spec(c);
    for (int64_t i = 0; i < c.seq_q; ++i) {
      const KeySpan keys = mask.row_keys(i);
      const AttentionSpec::KeySpan from_spec = spec.visible_keys(0, i);
      ASSERT_EQ(keys.begin, from_spec.begin);
      ASSERT_EQ(keys.end, from_spec.end);
      for (int64_t j = -1; j <= c.seq_kv; ++j)
        ASSERT_EQ(j >= keys.begin && j < keys.end, sees(c, i, j))
            << "row " << i << " key " << j << " window " << c.window_left << "," << c.window_right
            << (c.causal ? " causal" : "") << " " << c.seq_q << "x" << c.seq_kv;
    }
  }
}

// A query tile visits exactly the kv tiles that hold a key one of its rows sees (found here key
// by key), for both kernels' tile shapes; a Split-K block, those of its split.
TEST(KernelMask, QueryTilesVisitExactlyTheTilesTheirRowsSee) {
  for (KernelKind kernel : {KernelKind::fa1, KernelKind::splitk})
    for (const AttentionConfig& c : masked_configs(kernel)) {
      const Tiling t = make_tiling(c, 132);
      for (int32_t q = 0; q < t.num_q_tiles; ++q) {
        std::vector<bool> seen(static_cast<size_t>(t.num_kv_tiles), false);
        for (int64_t i = int64_t{q} * t.block_m; i < int64_t{q} * t.block_m + t.rows_in_q_tile(q); ++i)
          for (int64_t j = 0; j < c.seq_kv; ++j)
            if (sees(c, i, j)) seen[static_cast<size_t>(j / t.block_n)] = true;
        int32_t first = -1, last = -1;
        for (int32_t k = 0; k < t.num_kv_tiles; ++k)
          if (seen[static_cast<size_t>(k)]) {
            if (first < 0) first = k;
            last = k;
          }
        const KvTileRange visited = t.kv_tiles_visited(q);
        SCOPED_TRACE(std::string(to_string(kernel)) + " q tile " + std::to_string(q) + " window " +
                     std::to_string(c.window_left) + "," + std::to_string(c.window_right) +
                     (c.causal ? " causal " : " ") + std::to_string(c.seq_q) + "x" + std::to_string(c.seq_kv));
        if (first < 0) {
          EXPECT_TRUE(visited.empty());
        } else {
          EXPECT_EQ(visited.begin, first);
          EXPECT_EQ(visited.end, last + 1);
          for (int32_t k = first; k <= last; ++k) EXPECT_TRUE(seen[static_cast<size_t>(k)]) << "no gap: tile " << k;
        }
        for (int32_t s = 0; s < t.num_splits; ++s) {
          const KvTileRange split = t.split_kv_tiles(s);
          const KvTileRange block = splitk_visited_tiles(split, visited, true);
          int32_t count = 0;
          for (int32_t k = split.begin; k < split.end; ++k) count += seen[static_cast<size_t>(k)];
          EXPECT_EQ(block.size(), count) << "split " << s;
          if (count > 0) {
            EXPECT_TRUE(seen[static_cast<size_t>(block.begin)] && seen[static_cast<size_t>(block.end - 1)]);
          }
          const KvTileRange unguarded = splitk_visited_tiles(split, visited, false);
          EXPECT_TRUE(unguarded.begin == split.begin && unguarded.end == split.end) << "unguarded: the whole split";
        }
      }
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

  // The window round-trips; a tiling written before windows (no such fields) has none.
  AttentionConfig windowed = config(KernelKind::fa1, 200, 300, 64, true);
  windowed.window_left = 128;
  windowed.window_right = 0;
  const Tiling w = make_tiling(windowed, 132);
  EXPECT_EQ(w.window_left, 128);
  EXPECT_EQ(nlohmann::json(w).get<Tiling>(), w);
  nlohmann::json old = j;
  old.erase("window_left");
  old.erase("window_right");
  EXPECT_EQ(old.get<Tiling>(), t);
  nlohmann::json bad_window = nlohmann::json(w);
  bad_window["window_left"] = -2;
  EXPECT_THROW(bad_window.get<Tiling>(), ConfigError);
}

TEST(AttentionConfigFields, GqaWindowAndSoftcapRoundTripAndOldConfigsReadAsBefore) {
  AttentionConfig c = config(KernelKind::splitk, 1, 4096, 128, true, 0);
  c.heads = 32;
  c.heads_kv = 8;
  c.window_left = 1024;
  c.window_right = 0;
  c.softcap = 30.0;
  const nlohmann::json j = c;
  EXPECT_EQ(j.at("heads_kv"), 8);
  EXPECT_EQ(j.at("window_left"), 1024);
  EXPECT_EQ(j.at("window_right"), 0);
  EXPECT_EQ(j.at("softcap"), 30.0);
  EXPECT_EQ(j.get<AttentionConfig>(), c);
  // A config written before these fields: multi-head, no window, no softcap.
  nlohmann::json old = j;
  for (const char* key : {"heads_kv", "window_left", "window_right", "softcap"}) old.erase(key);
  const AttentionConfig back = old.get<AttentionConfig>();
  EXPECT_EQ(back.heads_kv, 0);
  EXPECT_EQ(back.kv_heads(), 32);
  EXPECT_FALSE(back.has_window());
  EXPECT_EQ(back.softcap, 0.0);
  for (const char* key : {"heads_kv", "window_left", "window_right", "softcap"}) {
    nlohmann::json bad = j;
    bad[key] = "eight";
    EXPECT_THROW(bad.get<AttentionConfig>(), ConfigError) << key;
  }

  // What the reference and the trace describe.
  const AttentionSpec spec = attention_spec(c);
  EXPECT_EQ(spec.heads_q, 32);
  EXPECT_EQ(spec.heads_kv, 8);
  EXPECT_EQ(spec.kv_head_of(31), 7);
  EXPECT_EQ(spec.causal, CausalAlign::bottom_right);
  EXPECT_EQ(spec.window_left, 1024);
  EXPECT_EQ(spec.window_right, 0);
  EXPECT_EQ(spec.softcap, 30.0);
  EXPECT_NO_THROW(validate(spec));
  c.heads_kv = 0;
  EXPECT_EQ(attention_spec(c).heads_kv, 32) << "0: as many kv heads as heads";
}

TEST(AttentionConfigFields, ValidationNamesTheField) {
  const auto field_of = [](const AttentionConfig& c) -> std::string {
    try {
      validate(c);
    } catch (const ConfigError& e) {
      return e.field();
    }
    return "";
  };
  AttentionConfig c = config(KernelKind::fa1, 64, 64, 64);
  c.heads = 12;
  for (int64_t ok : {0, 1, 2, 3, 4, 6, 12}) {
    c.heads_kv = ok;
    EXPECT_EQ(field_of(c), "") << ok;
  }
  for (int64_t bad : {-1, 5, 8, 24}) {
    c.heads_kv = bad;
    EXPECT_EQ(field_of(c), "heads_kv") << bad;
  }
  c.heads_kv = 0;
  for (auto [left, right] : {std::pair<int64_t, int64_t>{-2, 0}, {0, -7}, {int64_t{1} << 31, 0}}) {
    c.window_left = left;
    c.window_right = right;
    EXPECT_EQ(field_of(c), left < -1 || left > (1 << 30) ? "window_left" : "window_right") << left << "," << right;
  }
  c.window_left = c.window_right = -1;
  for (double bad : {-1.0, std::nan(""), double(INFINITY), 1e300, 1e-300}) {
    c.softcap = bad;
    EXPECT_EQ(field_of(c), "softcap") << bad;
  }
  c.softcap = 50.0;
  EXPECT_EQ(field_of(c), "");
  // The kernels take the scale as a float32: one that is not a normal float32 there (inf past
  // 3.4e38, 0 or subnormal below 1.2e-38) would run a different attention than the reference's.
  for (double bad : {-1.0, std::nan(""), double(INFINITY), 1e39, 1e300, 1e-39, 1e-300}) {
    c.softmax_scale = bad;
    EXPECT_EQ(field_of(c), "softmax_scale") << bad;
  }
  for (double ok : {0.0, 0.125, 1e-30, 1e30}) {
    c.softmax_scale = ok;
    EXPECT_EQ(field_of(c), "") << ok;
  }
  c.softmax_scale = 0.0;
  // The kv tensors' size counts the kv heads: 2^31 elements refused for heads, not for kv heads.
  c.heads = 1024;
  c.heads_kv = 1;
  c.seq_q = 8;
  c.seq_kv = int64_t{1} << 24;
  c.head_dim = 64;
  EXPECT_EQ(field_of(c), "");
  c.heads_kv = 0;
  EXPECT_EQ(field_of(c), "kv");
}

TEST(AttentionConfigFields, WindowText) {
  EXPECT_EQ(window_from_text("256,0"), (std::pair<int64_t, int64_t>{256, 0}));
  EXPECT_EQ(window_from_text("-1,-1"), (std::pair<int64_t, int64_t>{-1, -1}));
  EXPECT_EQ(window_from_text("-1,8"), (std::pair<int64_t, int64_t>{-1, 8}));
  for (const char* bad : {"", "256", "256,", ",0", "a,0", "1,2,3", "-2,0", "1.5,0", " 1,0", "1, 0"})
    EXPECT_FALSE(window_from_text(bad)) << bad;
  EXPECT_EQ(window_text(256, 0), "256,0");
  EXPECT_EQ(window_from_text(window_text(-1, 7)), (std::pair<int64_t, int64_t>{-1, 7}));
}

}  // namespace
}  // namespace ts
