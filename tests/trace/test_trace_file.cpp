// tilescope trace files: every field of every event, every metadata key and every extra
// tensor survive a round trip bit-exactly (NaN payloads included); the reader refuses
// traces that break the schema, each with its own error.
#include <gtest/gtest.h>

#include <algorithm>

#include "instrumentation/trace/tensor_files.h"
#include "instrumentation/trace/trace_file.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

void expect_same_header(const EventHeader& a, const EventHeader& b) {
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.convention, b.convention);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.head, b.head);
  EXPECT_EQ(a.q_tile, b.q_tile);
  EXPECT_EQ(a.kv_tile_begin, b.kv_tile_begin);
  EXPECT_EQ(a.kv_tile_end, b.kv_tile_end);
  EXPECT_EQ(a.split, b.split);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.where, b.where);
  EXPECT_EQ(a.block, b.block);
  EXPECT_EQ(a.time_ns, b.time_ns);
}

HostTensor random_host_tensor(std::mt19937_64& rng, DType dtype, std::vector<int64_t> shape) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_float(i, normal(rng));
  return t;
}

struct RandomTrace {
  CapturedEvents events;
  TraceInputs inputs;
  HostTensor output;
  std::vector<double> extra;
  std::map<std::string, std::string> metadata;
};

RandomTrace make_random_trace(std::mt19937_64& rng, size_t n) {
  RandomTrace r;
  const int32_t block_ms[] = {16, 32, 64, 128};
  const int32_t head_dims[] = {32, 64, 128, 256};
  const int32_t block_m = block_ms[rng() % 4], head_dim = head_dims[rng() % 4];
  r.events = test::random_events(rng, n, block_m, head_dim);
  const DType dtype = static_cast<DType>(rng() % 3);
  const int64_t pairs = 1 + static_cast<int64_t>(rng() % 3), sq = 1 + static_cast<int64_t>(rng() % 40);
  const int64_t skv = 1 + static_cast<int64_t>(rng() % 70);
  for (int64_t p = 0; p < pairs; ++p)
    r.inputs.pairs.push_back({static_cast<int32_t>(rng() % 4), static_cast<int32_t>(rng() % 16)});
  r.inputs.q = random_host_tensor(rng, dtype, {pairs, sq, head_dim});
  r.inputs.k = random_host_tensor(rng, dtype, {pairs, skv, head_dim});
  r.inputs.v = random_host_tensor(rng, dtype, {pairs, skv, head_dim});
  r.output = random_host_tensor(rng, dtype, {2, 3, sq, head_dim});
  r.extra.resize(1 + rng() % 50);
  for (double& x : r.extra) x = std::normal_distribution<double>(0, 1e6)(rng);
  r.metadata[std::string(trace_meta::config)] = R"({"kernel": "splitk", "seq_q": 1})";
  r.metadata[std::string(trace_meta::kernel)] = "splitk";
  r.metadata[std::string(trace_meta::fault)] = "double_count_l";
  r.metadata[std::string(trace_meta::backend)] = "cpu";
  r.metadata[std::string(trace_meta::device)] = "Intel(R) Xeon(R) \xc3\xa9";
  r.metadata[std::string(trace_meta::inputs_seed)] = std::to_string(rng());
  r.metadata[std::string(trace_meta::tool_version)] = "tilescope 0.1.0";
  return r;
}

void write_random_trace(const std::filesystem::path& path, const RandomTrace& r) {
  TraceContents c;
  c.events = &r.events;
  c.metadata = r.metadata;
  c.inputs = &r.inputs;
  c.output = &r.output;
  c.extra.push_back({"my.extra", ElemType::F64, {static_cast<int64_t>(r.extra.size())},
                     r.extra.data()});
  write_trace(path, c);
}

TEST(TraceFile, RoundTripsEveryFieldEventTensorAndMetadataKey) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::test_seed());
  TempDir dir;
  const RandomTrace r = make_random_trace(rng, 100 + rng() % 300);
  const auto path = dir / "run.trace.safetensors";
  write_random_trace(path, r);

  const TraceFile t = TraceFile::open(path);
  const CapturedEvents& ev = r.events;
  EXPECT_EQ(t.block_m(), ev.block_m);
  EXPECT_EQ(t.block_n(), ev.block_n);
  EXPECT_EQ(t.head_dim(), ev.head_dim);
  EXPECT_EQ(t.dropped_events(), ev.dropped);
  EXPECT_EQ(t.requested_events(), ev.requested);
  ASSERT_EQ(t.num_events(), ev.size());
  for (const auto& [k, v] : r.metadata) {
    ASSERT_NE(t.metadata_value(k), nullptr) << k;
    EXPECT_EQ(*t.metadata_value(k), v) << k;
  }
  EXPECT_EQ(*t.metadata_value(trace_meta::format), std::to_string(kTraceFormatVersion));
  EXPECT_EQ(*t.metadata_value(trace_meta::dropped_events), std::to_string(ev.dropped));
  EXPECT_EQ(*t.metadata_value(trace_meta::stage_names),
            R"(["fa1.step","splitk.partial","splitk.reduce","final"])");

  const size_t bm = static_cast<size_t>(ev.block_m), hd = static_cast<size_t>(ev.head_dim);
  const std::span<const std::byte> file = t.file().bytes(t.file().at(trace_tensor::o));
  std::array<size_t, kNumStages> per_stage{};
  for (size_t i = 0; i < ev.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    const TraceEvent e = t.event(i);
    expect_same_header(e.header, ev.headers[i]);
    ASSERT_EQ(e.m.size(), bm);
    ASSERT_EQ(e.o.size(), bm * hd);
    EXPECT_TRUE(test::same_bits(e.m.data(), &ev.m[i * bm], bm * 4));
    EXPECT_TRUE(test::same_bits(e.l.data(), &ev.l[i * bm], bm * 4));
    EXPECT_TRUE(test::same_bits(e.o.data(), &ev.o[i * bm * hd], bm * hd * 4));
    // No copy: the payload points into the file's mapping.
    EXPECT_GE(reinterpret_cast<const std::byte*>(e.o.data()), file.data());
    EXPECT_LE(reinterpret_cast<const std::byte*>(e.o.data() + e.o.size()), file.data() + file.size());
    ++per_stage[static_cast<size_t>(ev.headers[i].stage)];
  }
  EXPECT_EQ(t.events_per_stage(), per_stage);
  // The payloads do hold what makes bit-exactness matter.
  EXPECT_TRUE(std::any_of(ev.o.begin(), ev.o.end(), [](float x) { return std::isnan(x); }));
  EXPECT_TRUE(std::any_of(ev.o.begin(), ev.o.end(), [](float x) { return std::isinf(x); }));

  const CapturedEvents back = t.to_captured_events();
  EXPECT_TRUE(test::same_bits(back.headers.data(), ev.headers.data(), ev.size() * sizeof(EventHeader)));
  EXPECT_TRUE(test::same_bits(back.o.data(), ev.o.data(), ev.o.size() * 4));

  const std::optional<TraceInputs> in = t.read_inputs();
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->pairs, r.inputs.pairs);
  for (const auto& [got, want] : {std::pair{&in->q, &r.inputs.q}, std::pair{&in->k, &r.inputs.k},
                                  std::pair{&in->v, &r.inputs.v}}) {
    EXPECT_EQ(got->dtype, want->dtype);
    EXPECT_EQ(got->shape, want->shape);
    EXPECT_EQ(got->bytes, want->bytes);
  }
  const std::optional<HostTensor> out = t.read_output();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->dtype, r.output.dtype);
  EXPECT_EQ(out->shape, r.output.shape);
  EXPECT_EQ(out->bytes, r.output.bytes);
  const TensorView<double> extra = t.file().view<double>("my.extra");
  ASSERT_EQ(extra.size(), r.extra.size());
  EXPECT_TRUE(test::same_bits(extra.data(), r.extra.data(), r.extra.size() * 8));
}

TEST(TraceFile, EmptyTraceWithoutInputsRoundTrips) {
  TempDir dir;
  CapturedEvents ev;
  ev.block_m = 64;
  ev.block_n = 64;
  ev.head_dim = 128;
  ev.dropped = 17;
  ev.requested = 17;
  write_trace(dir / "e.safetensors", {.events = &ev});
  const TraceFile t = TraceFile::open(dir / "e.safetensors");
  EXPECT_EQ(t.num_events(), 0u);
  EXPECT_EQ(t.dropped_events(), 17u);
  EXPECT_FALSE(t.has_inputs());
  EXPECT_FALSE(t.read_inputs().has_value());
  EXPECT_FALSE(t.read_output().has_value());
}

// ---- the writer refuses what the reader would ----------------------------------------------

void expect_write_refused(const TempDir& dir, const TraceContents& c, const std::string& what) {
  SCOPED_TRACE(what);
  try {
    write_trace(dir / "w.safetensors", c);
    ADD_FAILURE() << "accepted";
  } catch (const FileWriteError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(TraceFileWrite, RefusesInconsistentContents) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::test_seed());
  TempDir dir;
  RandomTrace r = make_random_trace(rng, 10);
  {
    CapturedEvents ev = r.events;
    ev.o.pop_back();
    expect_write_refused(dir, {.events = &ev}, "do not match 10 events");
  }
  {
    CapturedEvents ev = r.events;
    ev.headers[3].stage = 9;
    expect_write_refused(dir, {.events = &ev}, "event 3: stage = 9");
  }
  {
    CapturedEvents ev = r.events;
    ev.headers[4].rows = ev.block_m + 1;
    expect_write_refused(dir, {.events = &ev}, "event 4: rows");
  }
  expect_write_refused(dir, {.events = &r.events, .metadata = {{"dropped_events", "0"}}},
                       "reserved for the trace writer");
  TraceInputs bad = r.inputs;
  bad.k.shape[2] += 1;
  expect_write_refused(dir, {.events = &r.events, .inputs = &bad}, "inputs q, k, v must be");
  std::vector<float> x(3, 1.0f);
  expect_write_refused(
      dir, {.events = &r.events, .extra = {{"events.more", ElemType::F32, {3}, x.data()}}},
      "reserved prefix 'events.'");
  expect_write_refused(dir, {}, "no events");
}

// ---- malformed traces, each made from a valid one ---------------------------------------

class TraceMalformed : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(test::test_seed());
    trace_ = make_random_trace(rng, 40);
    write_random_trace(dir_ / "good.safetensors", trace_);
    ASSERT_NO_THROW(TraceFile::open(dir_ / "good.safetensors"));
  }
  test::EditableFile good() { return test::EditableFile::load(dir_ / "good.safetensors"); }
  void expect_rejected(const test::EditableFile& f, const std::string& what) {
    SCOPED_TRACE("expecting: " + what);
    const auto path = dir_ / "bad.safetensors";
    f.save(path);
    try {
      TraceFile::open(path);
      ADD_FAILURE() << "accepted";
    } catch (const TraceFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
  TempDir dir_;
  RandomTrace trace_;
};

TEST_F(TraceMalformed, MissingRequiredEventTensors) {
  TS_SEED_TRACE();
  for (std::string_view name :
       {trace_tensor::stage, trace_tensor::convention, trace_tensor::batch, trace_tensor::head,
        trace_tensor::q_tile, trace_tensor::kv_tile_begin, trace_tensor::kv_tile_end,
        trace_tensor::split, trace_tensor::step, trace_tensor::rows, trace_tensor::where,
        trace_tensor::block, trace_tensor::time_ns, trace_tensor::m, trace_tensor::l,
        trace_tensor::o}) {
    auto f = good();
    f.remove(std::string(name));
    expect_rejected(f, "required tensor '" + std::string(name) + "' is missing");
  }
}

TEST_F(TraceMalformed, InconsistentEventCountsAndShapes) {
  TS_SEED_TRACE();
  auto f = good();
  auto& batch = f.at("events.batch");
  batch.shape = {39};
  batch.bytes.resize(39 * 4);
  expect_rejected(f, "tensor 'events.batch' has shape [39], expected [40]");
  f = good();
  auto& o = f.at("events.o");
  o.shape = {40, o.shape[1] * 2, o.shape[2] / 2};
  expect_rejected(f, "tensor 'events.o' has shape");
  f = good();
  f.metadata["block_m"] = std::to_string(trace_.events.block_m / 2);
  expect_rejected(f, "tensor 'events.m' has shape");
  f = good();
  auto& m = f.at("events.m");
  m.type = ElemType::I32;
  expect_rejected(f, "tensor 'events.m' has dtype I32, expected F32");
  f = good();
  f.at("events.stage").shape = {4, 10};
  expect_rejected(f, "must be 1-D");
}

TEST_F(TraceMalformed, EventCoordinatesOutOfRange) {
  TS_SEED_TRACE();
  const auto with = [&](const std::string& name, size_t event, int32_t value) {
    auto f = good();
    f.at(name).as<int32_t>()[event] = value;
    return f;
  };
  expect_rejected(with("events.stage", 7, 4), "event 7: stage = 4");
  expect_rejected(with("events.stage", 0, -1), "event 0: stage = -1");
  expect_rejected(with("events.convention", 3, 2), "event 3: convention = 2");
  expect_rejected(with("events.rows", 39, trace_.events.block_m + 1), "event 39: rows");
  expect_rejected(with("events.rows", 5, -3), "event 5: rows = -3");
  expect_rejected(with("events.batch", 2, -1), "event 2: batch = -1");
  expect_rejected(with("events.head", 2, -5), "event 2: head = -5");
  expect_rejected(with("events.q_tile", 9, -2), "event 9: q_tile = -2");
  expect_rejected(with("events.split", 9, -2), "event 9: split = -2");
  expect_rejected(with("events.kv_tile_begin", 1, -1), "event 1: kv_tile_begin = -1");
  auto f = good();
  f.at("events.kv_tile_begin").as<int32_t>()[6] = 10;
  f.at("events.kv_tile_end").as<int32_t>()[6] = 9;
  expect_rejected(f, "event 6: kv_tile_end = 9");
}

TEST_F(TraceMalformed, Metadata) {
  TS_SEED_TRACE();
  const auto with = [&](const std::string& key, std::optional<std::string> value) {
    auto f = good();
    if (value) f.metadata[key] = *value;
    else f.metadata.erase(key);
    return f;
  };
  expect_rejected(with("tilescope_format", std::nullopt), "'tilescope_format' is missing");
  expect_rejected(with("tilescope_format", "2"), "trace format 2 is not supported");
  expect_rejected(with("block_m", "abc"), "'block_m' = 'abc' is not a whole number");
  expect_rejected(with("block_m", "0"), "must be positive");
  expect_rejected(with("head_dim", "99999999"), "is not a whole number");
  expect_rejected(with("dropped_events", "-1"), "'dropped_events' = '-1'");
  expect_rejected(with("requested_events", ""), "'requested_events' = ''");
  expect_rejected(with("block_n", std::nullopt), "'block_n' is missing");
}

TEST_F(TraceMalformed, InputsAndOutput) {
  TS_SEED_TRACE();
  auto f = good();
  f.remove("inputs.v");
  expect_rejected(f, "inputs are incomplete");
  f = good();
  f.at("inputs.pairs").as<int32_t>()[1] = -1;
  expect_rejected(f, "'inputs.pairs' holds a negative");
  f = good();
  auto& k = f.at("inputs.k");
  k.shape = {k.shape[0], k.shape[1] * k.shape[2], 1};
  expect_rejected(f, "tensor 'inputs.k' has shape");
  f = good();
  auto& o = f.at("output.o");
  o.shape = {o.shape[0] * o.shape[1], o.shape[2], o.shape[3]};
  expect_rejected(f, "tensor 'output.o' has shape");
  f = good();
  auto& q = f.at("inputs.q");
  q.type = q.type == ElemType::F32 ? ElemType::I32 : ElemType::I16;
  expect_rejected(f, "tensor 'inputs.q' has dtype");
}

}  // namespace
}  // namespace ts
