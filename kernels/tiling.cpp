#include "kernels/tiling.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

namespace ts {

int32_t choose_num_splits(int64_t blocks_without_split, int sm_count, int32_t num_kv_tiles) {
  if (sm_count < 1) throw ConfigError("sm_count", "sm_count must be at least 1");
  const double slots = static_cast<double>(sm_count) * kSplitkBlocksPerSm;
  // Enough independent blocks already: splitting only adds partial traffic and a reduce.
  if (static_cast<double>(blocks_without_split) >= 0.8 * slots || num_kv_tiles <= 1) return 1;

  const int32_t max_splits = std::min<int32_t>(128, num_kv_tiles);
  // A count is worth considering only if it changes the tiles per split; otherwise its extra
  // splits would be empty (e.g. 64 tiles: 11 splits of 6 tiles, but 12 splits are 11 of 6
  // tiles and one empty).
  auto useful = [&](int32_t n) {
    return n == 1 || ceil_div(num_kv_tiles, n) != ceil_div(num_kv_tiles, n - 1);
  };
  // How full the last wave of blocks is: 1.0 when the blocks fill whole waves.
  auto wave_fill = [&](int32_t n) {
    const double waves = static_cast<double>(blocks_without_split) * n / slots;
    return waves / std::ceil(waves);
  };
  double best = 0.0;
  for (int32_t n = 1; n <= max_splits; ++n)
    if (useful(n)) best = std::max(best, wave_fill(n));
  for (int32_t n = 1; n <= max_splits; ++n)
    if (useful(n) && wave_fill(n) >= 0.85 * best) return n;
  return 1;
}

Tiling make_tiling(const AttentionConfig& config, int sm_count) {
  validate(config);
  if (sm_count < 1) throw ConfigError("sm_count", "sm_count must be at least 1");
  Tiling t;
  t.kernel = config.kernel;
  t.seq_q = config.seq_q;
  t.seq_kv = config.seq_kv;
  t.causal = config.causal;
  t.window_left = config.window_left;
  t.window_right = config.window_right;
  const int d = static_cast<int>(config.head_dim);
  if (config.kernel == KernelKind::fa1) {
    t.block_m = fa1_block_m(d);
    t.block_n = fa1_block_n(d);
  } else if (config.kernel == KernelKind::fa2 || config.kernel == KernelKind::splitk2) {
    t.block_m = fa2_block_m(d);
    t.block_n = kFa2BlockN;
  } else {
    t.block_m = splitk_block_m(config.seq_q);
    t.block_n = splitk_block_n(d);
  }
  t.num_q_tiles = static_cast<int32_t>(ceil_div(config.seq_q, t.block_m));
  t.num_kv_tiles = static_cast<int32_t>(ceil_div(config.seq_kv, t.block_n));
  if (!splits_kv(config.kernel)) {
    t.num_splits = 1;
  } else if (config.num_splits > 0) {
    t.num_splits = static_cast<int32_t>(config.num_splits);
  } else {
    t.num_splits =
        choose_num_splits(config.batch * config.heads * t.num_q_tiles, sm_count, t.num_kv_tiles);
  }
  t.kv_tiles_per_split = static_cast<int32_t>(ceil_div(t.num_kv_tiles, t.num_splits));
  return t;
}

void to_json(nlohmann::json& j, const Tiling& t) {
  j = nlohmann::json{{"kernel", to_string(t.kernel)},
                     {"seq_q", t.seq_q},
                     {"seq_kv", t.seq_kv},
                     {"causal", t.causal},
                     {"window_left", t.window_left},
                     {"window_right", t.window_right},
                     {"block_m", t.block_m},
                     {"block_n", t.block_n},
                     {"num_q_tiles", t.num_q_tiles},
                     {"num_kv_tiles", t.num_kv_tiles},
                     {"num_splits", t.num_splits},
                     {"kv_tiles_per_split", t.kv_tiles_per_split}};
}

namespace {

int64_t json_integer(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi) {
  const std::string field = std::string("tiling.") + key;
  if (!j.contains(key) || !j.at(key).is_number_integer())
    throw ConfigError(field, "tiling field '" + std::string(key) + "' must be an integer");
  const int64_t v = j.at(key).get<int64_t>();
  if (v < lo || v > hi)
    throw ConfigError(field, "tiling field '" + std::string(key) + "' must be in [" +
                                 std::to_string(lo) + ", " + std::to_string(hi) + "] (got " +
                                 std::to_string(v) + ")");
  return v;
}

void expect_equal(const char* key, int64_t got, int64_t expected) {
  if (got != expected)
    throw ConfigError(std::string("tiling.") + key,
                      "tiling field '" + std::string(key) + "' is " + std::to_string(got) +
                          " but the other fields imply " + std::to_string(expected));
}

}  // namespace

void from_json(const nlohmann::json& j, Tiling& out) {
  if (!j.is_object()) throw ConfigError("tiling", "tiling must be a JSON object");
  if (!j.contains("kernel") || !j.at("kernel").is_string())
    throw ConfigError("tiling.kernel", "tiling field 'kernel' must be a string");
  const auto kernel = kernel_from_name(j.at("kernel").get<std::string>());
  if (!kernel) throw ConfigError("tiling.kernel", "unknown kernel in tiling (fa1, splitk, fa2, splitk2)");
  if (!j.contains("causal") || !j.at("causal").is_boolean())
    throw ConfigError("tiling.causal", "tiling field 'causal' must be a boolean");
  constexpr int64_t kMaxSeq = int64_t{1} << 30;
  constexpr int64_t kMaxI32 = (int64_t{1} << 31) - 1;
  Tiling t;
  t.kernel = *kernel;
  t.causal = j.at("causal").get<bool>();
  t.seq_q = json_integer(j, "seq_q", 1, kMaxSeq);
  t.seq_kv = json_integer(j, "seq_kv", 1, kMaxSeq);
  // Absent in traces written before windows: those ran without one.
  t.window_left = j.contains("window_left") ? json_integer(j, "window_left", -1, kMaxSeq) : -1;
  t.window_right = j.contains("window_right") ? json_integer(j, "window_right", -1, kMaxSeq) : -1;
  t.block_m = static_cast<int32_t>(json_integer(j, "block_m", 1, 1024));
  t.block_n = static_cast<int32_t>(json_integer(j, "block_n", 1, 1 << 16));
  t.num_q_tiles = static_cast<int32_t>(json_integer(j, "num_q_tiles", 1, kMaxI32));
  t.num_kv_tiles = static_cast<int32_t>(json_integer(j, "num_kv_tiles", 1, kMaxI32));
  t.num_splits = static_cast<int32_t>(json_integer(j, "num_splits", 1, 1024));
  t.kv_tiles_per_split = static_cast<int32_t>(json_integer(j, "kv_tiles_per_split", 1, kMaxI32));
  expect_equal("num_q_tiles", t.num_q_tiles, ceil_div(t.seq_q, t.block_m));
  expect_equal("num_kv_tiles", t.num_kv_tiles, ceil_div(t.seq_kv, t.block_n));
  expect_equal("kv_tiles_per_split", t.kv_tiles_per_split, ceil_div(t.num_kv_tiles, t.num_splits));
  if (!splits_kv(t.kernel)) expect_equal("num_splits", t.num_splits, 1);
  out = t;
}

}  // namespace ts
