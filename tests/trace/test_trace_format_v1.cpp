// Format 1 traces (tilescope 0.1) still open, converted to the open event model: the committed
// sample traces (captured on a GPU) with the four fixed stages as the stage table, tiles turned
// into query rows and key ranges, and payloads that are the reference's states over those
// ranges; a format-1 Split-K trace of the empty_split fault (written here from the v1 schema)
// yields its unwritten partials as missing events, as 0.1's analysis derived them.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "base/attention_config.h"
#include "instrumentation/trace/trace_file.h"
#include "kernels/reference.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

const std::vector<StageInfo> kV1Stages = {{"fa1.step", StageKind::state, 0},
                                          {"splitk.partial", StageKind::state, 0},
                                          {"splitk.reduce", StageKind::merge, 1},
                                          {"final", StageKind::final, 0}};
constexpr int32_t kV1Step = 0, kV1Partial = 1, kV1Reduce = 2, kV1Final = 3;

std::filesystem::path asset(const std::string& name) {
  return std::filesystem::path(TS_ASSETS_DIR) / "traces" / name;
}

// An event's error against the float64 reference over its own rows and keys (the final output
// for the final stage), expressed in its convention: max |got - want| / max(1, |want|) over m
// (unless normalised: then the LSE) and O.
double event_error(const TraceFile& t, const ReferenceInputs& ref, size_t i) {
  const EventHeader& h = t.header(i);
  const auto block = compute_row_block(ref, RowBlock{h.batch, h.head, h.q_begin, h.rows}, {});
  const RefState canonical = t.stages()[size_t(h.stage)].kind == StageKind::final
                                 ? block->output()
                                 : block->state(std::span<const KeyRange>(h.keys, size_t(h.num_key_ranges)));
  const RefState want = express(canonical, h.convention, t.attention().effective_scale());
  const size_t d = size_t(t.head_dim());
  double worst = 0;
  const auto diff = [](double got, double w) {
    return std::isnan(got) ? INFINITY : got == w ? 0.0 : std::abs(got - w) / std::max(1.0, std::abs(w));
  };
  for (size_t r = 0; r < size_t(h.rows); ++r) {
    worst = std::max(worst, diff(t.m(i)[r], want.m[r]));
    for (size_t c = 0; c < d; ++c) worst = std::max(worst, diff(t.o(i)[r * d + c], want.o[r * d + c]));
  }
  return worst;
}

TEST(TraceFormat1, TheCommittedFa1TraceOpensAsTheOpenModel) {
  const TraceFile t = TraceFile::open(asset("fa1_causal_fp16.gpu.trace.safetensors"));
  EXPECT_EQ(t.format_version(), 1);
  EXPECT_EQ(t.stages(), kV1Stages) << "FA-1's final output is in pass 0";
  AttentionSpec want;
  want.batch = want.heads_q = want.heads_kv = 1;
  want.seq_q = 100;
  want.seq_kv = 300;
  want.head_dim = 64;
  want.dtype = DType::f16;
  want.causal = CausalAlign::bottom_right;
  EXPECT_EQ(t.attention(), want);
  EXPECT_EQ(t.max_rows(), 64);
  ASSERT_EQ(t.num_events(), 12u);
  EXPECT_TRUE(t.missing().empty());
  EXPECT_EQ(t.events_per_stage(), (std::vector<size_t>{10, 0, 0, 2}));
  // Query tile q of 64 rows: rows [64 q, ...); 5 kv tiles of 64 keys each, the last clipped to 300.
  for (size_t i = 0; i < t.num_events(); ++i) {
    const EventHeader& h = t.header(i);
    SCOPED_TRACE("event " + std::to_string(i));
    const int32_t q_tile = int32_t(i / 6), j = int32_t(i % 6);
    EXPECT_EQ(h.q_begin, q_tile * 64);
    EXPECT_EQ(h.rows, q_tile == 0 ? 64 : 36);
    EXPECT_EQ(h.kv_head, 0);
    ASSERT_EQ(h.num_key_ranges, 1);
    EXPECT_EQ(h.keys[0].begin, 0);
    if (j < 5) {
      EXPECT_EQ(h.stage, kV1Step);
      EXPECT_EQ(h.step, j);
      EXPECT_EQ(h.keys[0].end, std::min(64 * (j + 1), 300));
    } else {
      EXPECT_EQ(h.stage, kV1Final);
      EXPECT_EQ(h.convention, kNormalized);
      EXPECT_EQ(h.step, 5) << "after the block's steps";
      EXPECT_EQ(h.keys[0].end, 300);
    }
  }
  // The converted events hold what their key ranges say: the GPU's states match the reference.
  const std::optional<HeadInputs> in = t.read_inputs();
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->q_pairs, (std::vector<std::array<int32_t, 2>>{{0, 0}}));
  EXPECT_EQ(in->kv_pairs, in->q_pairs);
  const ReferenceInputs ref(t.attention(), *in, 1);
  for (size_t i = 0; i < t.num_events(); ++i) {
    const bool final = t.header(i).stage == kV1Final;
    EXPECT_LE(event_error(t, ref, i), final ? 2e-3 : 2e-5) << "event " << i;  // the output rounded to fp16
  }
}

TEST(TraceFormat1, TheCommittedSplitkTraceOpensAsTheOpenModel) {
  const TraceFile t = TraceFile::open(asset("splitk_double_count_l.gpu.trace.safetensors"));
  EXPECT_EQ(t.format_version(), 1);
  std::vector<StageInfo> stages = kV1Stages;
  stages[kV1Final].pass = 1;  // after the reduce
  EXPECT_EQ(t.stages(), stages);
  EXPECT_EQ(t.attention().seq_kv, 1000);
  EXPECT_EQ(t.attention().causal, CausalAlign::none);
  EXPECT_EQ(t.max_rows(), 8);
  ASSERT_EQ(t.num_events(), 72u);
  EXPECT_TRUE(t.missing().empty());
  // 4 splits of 2 kv tiles of 128 keys: split s covers [256 s, min(256 (s + 1), 1000)).
  const std::optional<HeadInputs> in = t.read_inputs();
  ASSERT_TRUE(in.has_value());
  const ReferenceInputs ref(t.attention(), *in, 1);
  int partials = 0, reduces = 0;
  for (size_t i = 0; i < t.num_events(); ++i) {
    const EventHeader& h = t.header(i);
    SCOPED_TRACE("event " + std::to_string(i));
    EXPECT_EQ(h.q_begin % 8, 0);
    EXPECT_EQ(h.rows, 8);
    ASSERT_EQ(h.num_key_ranges, 1);
    const int32_t split_end = std::min(256 * (h.split + 1), 1000);
    if (h.stage == kV1Partial) {
      ++partials;
      EXPECT_EQ(h.keys[0].begin, 256 * h.split);
      EXPECT_EQ(h.keys[0].end, split_end);
      EXPECT_LE(event_error(t, ref, i), 2e-5) << "every partial matches";
    } else if (h.stage == kV1Reduce) {
      ++reduces;
      EXPECT_EQ(h.step, h.split);
      EXPECT_EQ(h.keys[0].begin, 0);
      EXPECT_EQ(h.keys[0].end, split_end);
      EXPECT_GE(event_error(t, ref, i), 1e-2) << "the reduce weights each split's O by its l again";
    } else {
      EXPECT_EQ(h.stage, kV1Final);
      EXPECT_EQ(h.step, 4) << "after the 4 merges";
    }
  }
  EXPECT_EQ(partials, 32);
  EXPECT_EQ(reduces, 32);
}

// A format 1 file written from the v1 schema: the event columns of 0.1, in its order.
struct V1Event {
  int32_t stage, convention, batch, head, q_tile, kv_tile_begin, kv_tile_end, split, step, rows, where, block;
};

void write_format_1(const std::filesystem::path& path, const std::vector<V1Event>& events, const AttentionConfig& config,
                    int32_t block_m, int32_t block_n, const std::string& tiling, uint64_t dropped, std::mt19937_64& rng) {
  const size_t n = events.size();
  const char* names[] = {"stage", "convention", "batch", "head", "q_tile", "kv_tile_begin",
                         "kv_tile_end", "split", "step", "rows", "where", "block"};
  std::vector<std::vector<int32_t>> columns(12, std::vector<int32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const V1Event& e = events[i];
    const int32_t values[] = {e.stage, e.convention, e.batch, e.head, e.q_tile, e.kv_tile_begin,
                              e.kv_tile_end, e.split, e.step, e.rows, e.where, e.block};
    for (size_t c = 0; c < 12; ++c) columns[c][i] = values[c];
  }
  std::vector<int64_t> times(n);
  for (size_t i = 0; i < n; ++i) times[i] = int64_t(1000 + 10 * i);
  const auto ni = int64_t(n);
  std::vector<float> m(n * size_t(block_m)), l(m.size()), o(m.size() * size_t(config.head_dim));
  for (auto* v : {&m, &l, &o})
    for (float& x : *v) x = test::random_payload(rng);
  std::vector<TensorToWrite> tensors;
  for (size_t c = 0; c < 12; ++c)
    tensors.push_back({std::string("events.") + names[c], ElemType::I32, {ni}, columns[c].data()});
  tensors.push_back({"events.time_ns", ElemType::I64, {ni}, times.data()});
  tensors.push_back({"events.m", ElemType::F32, {ni, block_m}, m.data()});
  tensors.push_back({"events.l", ElemType::F32, {ni, block_m}, l.data()});
  tensors.push_back({"events.o", ElemType::F32, {ni, block_m, config.head_dim}, o.data()});
  std::map<std::string, std::string> meta = {
      {"tilescope_format", "1"},
      {"block_m", std::to_string(block_m)},
      {"block_n", std::to_string(block_n)},
      {"head_dim", std::to_string(config.head_dim)},
      {"dropped_events", std::to_string(dropped)},
      {"requested_events", std::to_string(n + dropped)},
      {"stage_names", R"(["fa1.step","splitk.partial","splitk.reduce","final"])"},
      {"convention_names", R"(["unnormalized", "normalized"])"},
      {"config", nlohmann::json(config).dump()},
      {"kernel", std::string(to_string(config.kernel))},
  };
  if (!tiling.empty()) meta["tiling"] = tiling;
  write_safetensors(path, tensors, meta);
}

// 0.1's empty_split capture: 2 heads, 16 queries (2 query tiles of 8), 100 keys (one kv tile of
// 128), 4 splits of one tile: splits 1..3 are empty and never wrote their partials.
std::vector<V1Event> empty_split_events() {
  std::vector<V1Event> ev;
  int32_t block = 0;
  for (int32_t h = 0; h < 2; ++h)
    for (int32_t qt = 0; qt < 2; ++qt) ev.push_back({kV1Partial, 0, 0, h, qt, 0, 1, 0, 0, 8, 3, block++ * 4});
  block = 0;
  for (int32_t h = 0; h < 2; ++h)
    for (int32_t qt = 0; qt < 2; ++qt, ++block) {
      for (int32_t s = 0; s < 4; ++s) ev.push_back({kV1Reduce, 0, 0, h, qt, 0, 1, s, s, 8, 5, block});
      ev.push_back({kV1Final, 1, 0, h, qt, 0, 1, -1, 0, 8, 5, block});
    }
  return ev;
}

AttentionConfig empty_split_config() {
  AttentionConfig c;
  c.kernel = KernelKind::splitk;
  c.fault = Fault::empty_split;
  c.heads = 2;
  c.seq_q = 16;
  c.seq_kv = 100;
  c.head_dim = 64;
  c.num_splits = 4;
  return c;
}

constexpr const char* kEmptySplitTiling = R"({"num_splits": 4, "kv_tiles_per_split": 1})";

TEST(TraceFormat1, AnEmptySplitTraceYieldsItsUnwrittenPartialsAsMissingEvents) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  const auto path = dir / "v1_empty_split.trace.safetensors";
  write_format_1(path, empty_split_events(), empty_split_config(), 8, 128, kEmptySplitTiling, 0, rng);
  const TraceFile t = TraceFile::open(path);
  EXPECT_EQ(t.format_version(), 1);
  ASSERT_EQ(t.num_events(), 4u + 4 * 5);
  EXPECT_EQ(t.attention().heads_q, 2);
  EXPECT_EQ(t.attention().seq_kv, 100);
  // The partial of split 0 covers the one tile: keys [0, 100).
  EXPECT_EQ(t.header(0).keys[0].begin, 0);
  EXPECT_EQ(t.header(0).keys[0].end, 100);
  // Missing: splits 1..3 of each (head, query tile), empty key ranges at the end of the keys.
  ASSERT_EQ(t.missing().size(), 2u * 2 * 3);
  size_t k = 0;
  for (int32_t h = 0; h < 2; ++h)
    for (int32_t qt = 0; qt < 2; ++qt)
      for (int32_t s = 1; s < 4; ++s, ++k) {
        const EventHeader& e = t.missing()[k];
        SCOPED_TRACE("missing " + std::to_string(k));
        EXPECT_EQ(e.stage, kV1Partial);
        EXPECT_EQ(e.convention, 0);
        EXPECT_EQ(e.batch, 0);
        EXPECT_EQ(e.head, h);
        EXPECT_EQ(e.kv_head, h);
        EXPECT_EQ(e.q_begin, qt * 8);
        EXPECT_EQ(e.rows, 8);
        EXPECT_EQ(e.split, s);
        EXPECT_EQ(e.step, 0);
        ASSERT_EQ(e.num_key_ranges, 1);
        EXPECT_EQ(e.keys[0].begin, 100);
        EXPECT_EQ(e.keys[0].end, 100);
      }
  // The converted trace is a valid format 2 trace: written again and read, it is the same.
  const CapturedEvents ev = t.to_captured_events();
  write_trace(dir / "v2.trace.safetensors", {.events = &ev, .attention = t.attention()});
  const TraceFile again = TraceFile::open(dir / "v2.trace.safetensors");
  EXPECT_EQ(again.format_version(), 2);
  EXPECT_EQ(again.stages(), t.stages());
  EXPECT_TRUE(test::same_bits(again.missing().data(), t.missing().data(), t.missing().size() * sizeof(EventHeader)));
  EXPECT_TRUE(test::same_bits(again.o_all().data(), t.o_all().data(), t.o_all().size() * 4));
}

TEST(TraceFormat1, NothingIsMissingWhenEventsWereDroppedOrAllWritten) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  // Dropped events: what is absent may have been dropped, so nothing is called missing.
  write_format_1(dir / "dropped.safetensors", empty_split_events(), empty_split_config(), 8, 128, kEmptySplitTiling,
                 5, rng);
  EXPECT_TRUE(TraceFile::open(dir / "dropped.safetensors").missing().empty());
  // Every split written (the correct kernel): nothing missing.
  std::vector<V1Event> full = empty_split_events();
  for (int32_t h = 0; h < 2; ++h)
    for (int32_t qt = 0; qt < 2; ++qt)
      for (int32_t s = 1; s < 4; ++s) full.push_back({kV1Partial, 0, 0, h, qt, 1, 1, s, 0, 8, 3, 0});
  AttentionConfig c = empty_split_config();
  c.fault = Fault::none;
  write_format_1(dir / "full.safetensors", full, c, 8, 128, kEmptySplitTiling, 0, rng);
  const TraceFile t = TraceFile::open(dir / "full.safetensors");
  EXPECT_TRUE(t.missing().empty());
  EXPECT_EQ(t.num_events(), full.size());
}

TEST(TraceFormat1, RefusesWhatCannotBeConverted) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  const auto refused = [&](const std::filesystem::path& path, const std::string& what) {
    try {
      TraceFile::open(path);
      ADD_FAILURE() << "accepted";
    } catch (const TraceFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // No tiling for a Split-K run: the splits' keys are unknown.
  write_format_1(dir / "no_tiling.safetensors", empty_split_events(), empty_split_config(), 8, 128, "", 0, rng);
  refused(dir / "no_tiling.safetensors", "no valid 'tiling' metadata");
  // A query tile outside the run.
  std::vector<V1Event> ev = empty_split_events();
  ev[2].q_tile = 2;
  write_format_1(dir / "tile.safetensors", ev, empty_split_config(), 8, 128, kEmptySplitTiling, 0, rng);
  refused(dir / "tile.safetensors", "event 2: batch 0, head 1, query tile 2 are outside the run");
  // A stage format 1 did not have.
  ev = empty_split_events();
  ev[1].stage = 4;
  write_format_1(dir / "stage.safetensors", ev, empty_split_config(), 8, 128, kEmptySplitTiling, 0, rng);
  refused(dir / "stage.safetensors", "event 1: stage 4");
  // No config at all.
  test::EditableFile f = test::EditableFile::load(dir / "stage.safetensors");
  f.metadata.erase("config");
  f.save(dir / "no_config.safetensors");
  refused(dir / "no_config.safetensors", "has no 'config' metadata");
}

}  // namespace
}  // namespace ts
