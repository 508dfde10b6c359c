#include "instrumentation/trace/trace_format_v1.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/attention_config.h"
#include "base/host_tensor.h"

namespace ts {
namespace {

// Format 1's stages, by their stored value.
enum V1Stage : int32_t { kStep = 0, kPartial = 1, kReduce = 2, kFinal = 3, kNumV1Stages = 4 };

// Format 1's event columns, in its EventHeader's order.
constexpr const char* kV1Columns[] = {"stage", "convention", "batch", "head", "q_tile", "kv_tile_begin",
                                      "kv_tile_end", "split", "step", "rows", "where", "block"};
enum V1Column { cStage, cConvention, cBatch, cHead, cQTile, cKvBegin, cKvEnd, cSplit, cStep, cRows, cWhere, cBlock };

struct V1Tiling {
  bool splitk = false;
  int64_t seq_q = 0, seq_kv = 0;
  bool causal = false;
  int32_t block_m = 0, block_n = 0, num_q_tiles = 0, num_kv_tiles = 0, num_splits = 1, per_split = 0;

  int32_t rows_in_q_tile(int64_t t) const {
    return static_cast<int32_t>(std::min<int64_t>(block_m, seq_q - t * block_m));
  }
  // 0.1's causal_kv_tile_end: one past the last kv tile a query tile's rows can see.
  int32_t kv_tiles_visited(int64_t t) const {
    if (!causal) return num_kv_tiles;
    const int64_t last_key = t * block_m + rows_in_q_tile(t) - 1 + seq_kv - seq_q;
    if (last_key < 0) return 0;
    return static_cast<int32_t>(std::min<int64_t>(last_key / block_n + 1, num_kv_tiles));
  }
  std::pair<int32_t, int32_t> split_tiles(int32_t s) const {
    const int64_t b = int64_t{s} * per_split, e = b + per_split;
    return {static_cast<int32_t>(std::min<int64_t>(b, num_kv_tiles)),
            static_cast<int32_t>(std::min<int64_t>(e, num_kv_tiles))};
  }
};

uint64_t meta_number(const SafetensorsFile& f, const char* key, uint64_t max) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end())
    throw f.error(std::string("metadata key '") + key + "' is missing (not a tilescope trace, or a damaged one)");
  uint64_t x = 0;
  const std::string& s = it->second;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size() || x > max)
    throw f.error(std::string("metadata '") + key + "' is not a whole number in [0, " + std::to_string(max) + "]");
  return x;
}

}  // namespace

Format1Trace read_format_1(const SafetensorsFile& f) {
  Format1Trace out;
  constexpr uint64_t kMaxTile = 1u << 16;
  const auto block_m = static_cast<int32_t>(meta_number(f, "block_m", kMaxTile));
  const auto block_n = static_cast<int32_t>(meta_number(f, "block_n", kMaxTile));
  out.head_dim = static_cast<int32_t>(meta_number(f, "head_dim", kMaxTile));
  if (block_m == 0 || block_n == 0 || out.head_dim == 0)
    throw f.error("block_m, block_n and head_dim must be positive");
  out.max_rows = block_m;
  out.dropped = meta_number(f, "dropped_events", std::numeric_limits<uint64_t>::max());
  out.requested = meta_number(f, "requested_events", std::numeric_limits<uint64_t>::max());

  // The config is what the conversion rests on (sizes, causal, kernel).
  AttentionConfig config;
  auto cit = f.metadata().find("config");
  if (cit == f.metadata().end())
    throw f.error("this format 1 trace has no 'config' metadata: it cannot be converted (the attention it "
                  "recorded is unknown)");
  try {
    from_json(nlohmann::json::parse(cit->second), config);
    validate(config);
  } catch (const std::exception& e) {
    throw f.error(std::string("the format 1 'config' metadata is not a valid config: ") + e.what());
  }
  if (config.head_dim != out.head_dim)
    throw f.error("metadata head_dim " + std::to_string(out.head_dim) + " differs from the config's " +
                  std::to_string(config.head_dim));
  V1Tiling t;
  t.splitk = config.kernel == KernelKind::splitk;
  t.seq_q = config.seq_q;
  t.seq_kv = config.seq_kv;
  t.causal = config.causal;
  t.block_m = block_m;
  t.block_n = block_n;
  t.num_q_tiles = static_cast<int32_t>((config.seq_q + block_m - 1) / block_m);
  t.num_kv_tiles = static_cast<int32_t>((config.seq_kv + block_n - 1) / block_n);
  t.num_splits = 1;
  t.per_split = t.num_kv_tiles;
  if (t.splitk) {
    auto tit = f.metadata().find("tiling");
    nlohmann::json tj = tit == f.metadata().end() ? nlohmann::json() : nlohmann::json::parse(tit->second, nullptr, false);
    if (!tj.is_object() || !tj.contains("num_splits") || !tj["num_splits"].is_number_integer() ||
        !tj.contains("kv_tiles_per_split") || !tj["kv_tiles_per_split"].is_number_integer())
      throw f.error("this format 1 Split-K trace has no valid 'tiling' metadata (num_splits, kv_tiles_per_split)");
    const int64_t splits = tj["num_splits"].get<int64_t>(), per = tj["kv_tiles_per_split"].get<int64_t>();
    if (splits < 1 || splits > 1024 || per < 1 || per > t.num_kv_tiles)
      throw f.error("the format 1 'tiling' metadata holds num_splits " + std::to_string(splits) +
                    " and kv_tiles_per_split " + std::to_string(per) + ", which do not fit the config");
    t.num_splits = static_cast<int32_t>(splits);
    t.per_split = static_cast<int32_t>(per);
  }

  AttentionSpec& spec = out.attention;
  spec.batch = config.batch;
  spec.heads_q = spec.heads_kv = config.heads;
  spec.seq_q = config.seq_q;
  spec.seq_kv = config.seq_kv;
  spec.head_dim = config.head_dim;
  spec.dtype = config.dtype;
  spec.scale = config.softmax_scale;
  spec.causal = config.causal ? CausalAlign::bottom_right : CausalAlign::none;
  out.stages = {{"fa1.step", StageKind::state, 0},
                {"splitk.partial", StageKind::state, 0},
                {"splitk.reduce", StageKind::merge, 1},
                {"final", StageKind::final, t.splitk ? 1 : 0}};

  // Columns: all 1-D with one length N.
  const auto required = [&](const std::string& name) -> const TensorInfo& {
    if (const TensorInfo* x = f.find(name)) return *x;
    throw f.error("required tensor '" + name + "' is missing (not a tilescope trace, or a damaged one)");
  };
  const TensorInfo& first = required("events.stage");
  if (first.shape.size() != 1) throw f.error("tensor 'events.stage' must be 1-D [N]");
  const int64_t n = first.shape[0];
  std::vector<TensorView<int32_t>> cols;
  for (const char* c : kV1Columns) {
    const TensorInfo& ti = required(std::string("events.") + c);
    if (ti.shape != std::vector<int64_t>{n})
      throw f.error("tensor '" + ti.name + "' has shape " + shape_string(ti.shape) + ", expected [" +
                    std::to_string(n) + "]");
    cols.push_back(f.view<int32_t>(ti));
  }
  const TensorInfo& time = required("events.time_ns");
  if (time.shape != std::vector<int64_t>{n}) throw f.error("tensor 'events.time_ns' must be [N]");
  const TensorView<int64_t> times = f.view<int64_t>(time);
  const auto payload = [&](const char* name, std::vector<int64_t> shape) {
    const TensorInfo& ti = required(name);
    if (ti.shape != shape)
      throw f.error(std::string("tensor '") + name + "' has shape " + shape_string(ti.shape) + ", expected " +
                    shape_string(shape));
    return f.view<float>(ti);
  };
  out.m = payload("events.m", {n, block_m});
  out.l = payload("events.l", {n, block_m});
  out.o = payload("events.o", {n, block_m, out.head_dim});

  std::set<std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t>> present;  // stage, b, h, q tile, split/step
  std::set<std::tuple<int32_t, int32_t, int32_t>> tiles;
  uint32_t stage_seen = 0;
  out.headers.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto col = [&](V1Column c) { return cols[static_cast<size_t>(c)][static_cast<size_t>(i)]; };
    const std::string where = "event " + std::to_string(i) + ": ";
    const int32_t stage = col(cStage);
    if (stage < 0 || stage >= kNumV1Stages) throw f.error(where + "stage " + std::to_string(stage) + " (stages are 0..3)");
    if (col(cConvention) != 0 && col(cConvention) != 1)
      throw f.error(where + "convention " + std::to_string(col(cConvention)) + " (0 or 1)");
    const int32_t b = col(cBatch), h = col(cHead), qt = col(cQTile), rows = col(cRows);
    if (b < 0 || b >= config.batch || h < 0 || h >= config.heads || qt < 0 || qt >= t.num_q_tiles)
      throw f.error(where + "batch " + std::to_string(b) + ", head " + std::to_string(h) + ", query tile " +
                    std::to_string(qt) + " are outside the run");
    if (rows != t.rows_in_q_tile(qt))
      throw f.error(where + "holds " + std::to_string(rows) + " rows; query tile " + std::to_string(qt) + " has " +
                    std::to_string(t.rows_in_q_tile(qt)));
    const int32_t kb = col(cKvBegin), ke = col(cKvEnd), split = col(cSplit), step = col(cStep);
    if (kb < 0 || ke < kb || ke > t.num_kv_tiles)
      throw f.error(where + "kv tiles [" + std::to_string(kb) + ", " + std::to_string(ke) + ") are outside the run's " +
                    std::to_string(t.num_kv_tiles));
    if (split < -1 || split >= t.num_splits || step < 0 || col(cWhere) < -1 || col(cBlock) < 0)
      throw f.error(where + "split " + std::to_string(split) + ", step " + std::to_string(step) +
                    " or its where / block are outside the run");
    if ((stage == kPartial || stage == kReduce) && split < 0)
      throw f.error(where + "a Split-K event without its split");
    if (stage == kStep && step >= t.kv_tiles_visited(qt))
      throw f.error(where + "step " + std::to_string(step) + " is past the kv tiles its query tile visits");
    EventHeader e{};
    e.stage = stage;
    e.convention = col(cConvention);
    e.batch = b;
    e.head = h;
    e.kv_head = h;
    e.q_begin = qt * block_m;
    e.rows = rows;
    e.split = split;
    e.step = stage == kFinal ? (t.splitk ? t.num_splits : t.kv_tiles_visited(qt)) : stage == kReduce ? split : step;
    e.block = col(cBlock);
    e.where = col(cWhere);
    e.num_key_ranges = 1;
    const auto key_of = [&](int64_t tile) { return static_cast<int32_t>(std::min<int64_t>(tile * block_n, config.seq_kv)); };
    e.keys[0] = {key_of(kb), key_of(ke)};
    e.time_ns = static_cast<uint64_t>(times[static_cast<size_t>(i)]);
    out.headers.push_back(e);
    present.insert({stage, b, h, qt, stage == kStep ? step : split});
    tiles.insert({b, h, qt});
    stage_seen |= 1u << stage;
  }

  // The events a full trace of these tiles and stages holds, that this one lacks (0.1's rule).
  // Counted first: a small file can claim tilings of millions of events per tile.
  if (out.dropped == 0) {
    uint64_t expected = 0;
    for (const auto& tile : tiles)
      expected += t.splitk ? 2ull * static_cast<uint64_t>(t.num_splits) + 1
                           : static_cast<uint64_t>(t.kv_tiles_visited(std::get<2>(tile))) + 1;
    if (expected > kMaxFormat1ExpectedEvents)
      throw f.error("the trace's tiling claims " + std::to_string(expected) + " events for its " +
                    std::to_string(tiles.size()) + " traced query tiles (" + std::to_string(t.num_kv_tiles) +
                    " kv tiles of " + std::to_string(block_n) + " keys), more than the " +
                    std::to_string(kMaxFormat1ExpectedEvents) + " a format 1 trace is converted with");
  }
  if (out.dropped == 0) {
    const auto add_missing = [&](int32_t stage, const std::tuple<int32_t, int32_t, int32_t>& tile, int32_t split,
                                 int32_t step, int32_t kb, int32_t ke) {
      const auto [b, h, qt] = tile;
      if (present.count({stage, b, h, qt, stage == kStep ? step : split})) return;
      EventHeader e{};
      e.stage = stage;
      e.convention = stage == kFinal ? 1 : 0;
      e.batch = b;
      e.head = h;
      e.kv_head = h;
      e.q_begin = qt * block_m;
      e.rows = t.rows_in_q_tile(qt);
      e.split = split;
      e.step = step;
      e.block = -1;
      e.where = -1;
      e.num_key_ranges = 1;
      e.keys[0] = {static_cast<int32_t>(std::min<int64_t>(int64_t{kb} * block_n, config.seq_kv)),
                   static_cast<int32_t>(std::min<int64_t>(int64_t{ke} * block_n, config.seq_kv))};
      out.missing.push_back(e);
    };
    for (const auto& tile : tiles) {
      const int32_t qt = std::get<2>(tile);
      if (!t.splitk) {
        if (stage_seen & (1u << kStep))
          for (int32_t s = 0; s < t.kv_tiles_visited(qt); ++s) add_missing(kStep, tile, -1, s, 0, s + 1);
      } else {
        for (int32_t s = 0; s < t.num_splits; ++s) {
          const auto [kb, ke] = t.split_tiles(s);
          if (stage_seen & (1u << kPartial)) add_missing(kPartial, tile, s, 0, kb, ke);
          if (stage_seen & (1u << kReduce)) add_missing(kReduce, tile, s, s, 0, ke);
        }
      }
      if (stage_seen & (1u << kFinal))
        add_missing(kFinal, tile, -1, t.splitk ? t.num_splits : t.kv_tiles_visited(qt), 0,
                    t.splitk ? t.num_kv_tiles : t.kv_tiles_visited(qt));
    }
  }
  return out;
}

}  // namespace ts
