// tilescope trace files, format 2: every field of every event and missing event, the stage
// table, the attention description, every metadata key, the inputs, the output and every extra
// tensor survive a round trip bit-exactly (NaN payloads included); the writer refuses what the
// reader would; the reader refuses hostile files, each with its own TraceFormatError.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

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
  EXPECT_EQ(a.kv_head, b.kv_head);
  EXPECT_EQ(a.q_begin, b.q_begin);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.split, b.split);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.block, b.block);
  EXPECT_EQ(a.where, b.where);
  EXPECT_EQ(a.num_key_ranges, b.num_key_ranges);
  for (int k = 0; k < kMaxKeyRanges; ++k) {
    EXPECT_EQ(a.keys[k].begin, b.keys[k].begin) << "key range " << k;
    EXPECT_EQ(a.keys[k].end, b.keys[k].end) << "key range " << k;
  }
  EXPECT_EQ(a.time_ns, b.time_ns);
}

HostTensor random_host_tensor(std::mt19937_64& rng, DType dtype, std::vector<int64_t> shape) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    do {
      t.set_float(i, normal(rng));
    } while (t.get_float(i) == 0.0f);
  }
  return t;
}

// Some distinct (batch, head) pairs of `heads` heads, in a random order.
std::vector<std::array<int32_t, 2>> random_pairs(std::mt19937_64& rng, int64_t batch, int64_t heads) {
  std::vector<std::array<int32_t, 2>> all;
  for (int32_t b = 0; b < batch; ++b)
    for (int32_t h = 0; h < heads; ++h) all.push_back({b, h});
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(1 + rng() % all.size());
  return all;
}

struct RandomTrace {
  AttentionSpec spec;
  CapturedEvents events;
  HeadInputs inputs;
  HostTensor output;
  std::vector<float> output_lse;
  std::vector<double> extra;
  std::map<std::string, std::string> metadata;
};

RandomTrace make_random_trace(std::mt19937_64& rng, size_t n) {
  RandomTrace r;
  const int32_t max_rows[] = {1, 8, 16, 64};
  const int32_t head_dims[] = {8, 32, 64, 128};
  r.spec = test::random_spec(rng, head_dims[rng() % 4]);
  r.events = test::random_events(rng, n, max_rows[rng() % 4], r.spec, test::random_stage_table(rng), n / 8);
  const AttentionSpec& s = r.spec;
  r.inputs.q_pairs = random_pairs(rng, s.batch, s.heads_q);
  r.inputs.kv_pairs = random_pairs(rng, s.batch, s.heads_kv);
  const auto pq = static_cast<int64_t>(r.inputs.q_pairs.size()), pk = static_cast<int64_t>(r.inputs.kv_pairs.size());
  r.inputs.q = random_host_tensor(rng, s.dtype, {pq, s.seq_q, s.head_dim});
  r.inputs.k = random_host_tensor(rng, s.dtype, {pk, s.seq_kv, s.head_dim});
  r.inputs.v = random_host_tensor(rng, s.dtype, {pk, s.seq_kv, s.head_dim});
  r.output = random_host_tensor(rng, static_cast<DType>(rng() % 3), {s.batch, s.heads_q, s.seq_q, s.head_dim});
  r.output_lse.resize(static_cast<size_t>(s.batch * s.heads_q * s.seq_q));
  for (float& x : r.output_lse) x = test::random_payload(rng);
  r.extra.resize(1 + rng() % 50);
  for (double& x : r.extra) x = std::normal_distribution<double>(0, 1e6)(rng);
  r.metadata[std::string(trace_meta::config)] = R"({"kernel": "splitk", "seq_q": 1})";
  r.metadata[std::string(trace_meta::kernel)] = "my_kernel";
  r.metadata[std::string(trace_meta::fault)] = "double_count_l";
  r.metadata[std::string(trace_meta::backend)] = "cpu";
  r.metadata[std::string(trace_meta::device)] = "Intel(R) Xeon(R) \xc3\xa9";
  r.metadata[std::string(trace_meta::inputs_seed)] = std::to_string(rng());
  r.metadata[std::string(trace_meta::tool_version)] = "tilescope 0.2.0";
  return r;
}

TraceContents contents_of(const RandomTrace& r) {
  TraceContents c;
  c.events = &r.events;
  c.attention = r.spec;
  c.metadata = r.metadata;
  c.inputs = &r.inputs;
  c.output = &r.output;
  c.output_lse = &r.output_lse;
  c.extra.push_back({"my.extra", ElemType::F64, {static_cast<int64_t>(r.extra.size())}, r.extra.data()});
  return c;
}

void write_random_trace(const std::filesystem::path& path, const RandomTrace& r) { write_trace(path, contents_of(r)); }

void expect_same_tensor(const HostTensor& got, const HostTensor& want) {
  EXPECT_EQ(got.dtype, want.dtype);
  EXPECT_EQ(got.shape, want.shape);
  EXPECT_EQ(got.bytes, want.bytes);
}

TEST(TraceFile, RoundTripsEveryFieldEventTensorAndMetadataKey) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  const RandomTrace r = make_random_trace(rng, 100 + rng() % 300);
  const auto path = dir / "run.trace.safetensors";
  write_random_trace(path, r);

  const TraceFile t = TraceFile::open(path);
  const CapturedEvents& ev = r.events;
  EXPECT_EQ(t.format_version(), 2);
  EXPECT_EQ(t.attention(), r.spec);
  EXPECT_EQ(t.stages(), ev.stages);
  EXPECT_EQ(t.max_rows(), test::stored_rows_of(ev));  // compact: the most rows of any event
  EXPECT_EQ(t.head_dim(), ev.head_dim);
  EXPECT_EQ(t.dropped_events(), ev.dropped);
  EXPECT_EQ(t.requested_events(), ev.requested);
  ASSERT_EQ(t.num_events(), ev.size());
  for (const auto& [k, v] : r.metadata) {
    ASSERT_NE(t.metadata_value(k), nullptr) << k;
    EXPECT_EQ(*t.metadata_value(k), v) << k;
  }
  EXPECT_EQ(*t.metadata_value(trace_meta::format), "2");
  EXPECT_EQ(*t.metadata_value(trace_meta::dropped_events), std::to_string(ev.dropped));
  EXPECT_EQ(parse_stage_table(*t.metadata_value(trace_meta::stages)), ev.stages);

  // The key ranges tensor is as wide as the most ranges any event or missing event holds.
  int32_t widest = 1;
  for (const auto* list : {&ev.headers, &ev.missing})
    for (const EventHeader& h : *list) widest = std::max(widest, h.num_key_ranges);
  EXPECT_EQ(t.file().at("events.key_ranges").shape,
            (std::vector<int64_t>{static_cast<int64_t>(ev.size()), widest, 2}));

  // The file holds each event's first `rows` rows of the `reserved` the events were made with.
  const size_t rows = static_cast<size_t>(test::stored_rows_of(ev)), reserved = static_cast<size_t>(ev.max_rows),
               hd = static_cast<size_t>(ev.head_dim);
  const std::span<const std::byte> file = t.file().bytes(t.file().at(trace_tensor::o));
  std::vector<size_t> per_stage(ev.stages.size(), 0);
  for (size_t i = 0; i < ev.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    expect_same_header(t.header(i), ev.headers[i]);
    ASSERT_EQ(t.m(i).size(), rows);
    ASSERT_EQ(t.o(i).size(), rows * hd);
    EXPECT_TRUE(test::same_bits(t.m(i).data(), &ev.m[i * reserved], rows * 4));
    EXPECT_TRUE(test::same_bits(t.l(i).data(), &ev.l[i * reserved], rows * 4));
    EXPECT_TRUE(test::same_bits(t.o(i).data(), &ev.o[i * reserved * hd], rows * hd * 4));
    // No copy: the payload points into the file's mapping.
    if (!t.o(i).empty()) {
      EXPECT_GE(reinterpret_cast<const std::byte*>(t.o(i).data()), file.data());
      EXPECT_LE(reinterpret_cast<const std::byte*>(t.o(i).data() + t.o(i).size()), file.data() + file.size());
    }
    ++per_stage[static_cast<size_t>(ev.headers[i].stage)];
  }
  EXPECT_EQ(t.events_per_stage(), per_stage);
  ASSERT_EQ(t.missing().size(), ev.missing.size());
  ASSERT_FALSE(ev.missing.empty());
  for (size_t i = 0; i < ev.missing.size(); ++i) {
    SCOPED_TRACE("missing event " + std::to_string(i));
    expect_same_header(t.missing()[i], ev.missing[i]);
  }
  // The payloads do hold what makes bit-exactness matter.
  EXPECT_TRUE(std::any_of(ev.o.begin(), ev.o.end(), [](float x) { return std::isnan(x); }));
  EXPECT_TRUE(std::any_of(ev.o.begin(), ev.o.end(), [](float x) { return std::isinf(x); }));

  const CapturedEvents back = t.to_captured_events();
  EXPECT_EQ(back.stages, ev.stages);
  EXPECT_TRUE(test::same_bits(back.headers.data(), ev.headers.data(), ev.size() * sizeof(EventHeader)));
  EXPECT_TRUE(test::same_bits(back.missing.data(), ev.missing.data(), ev.missing.size() * sizeof(EventHeader)));
  EXPECT_EQ(back.max_rows, static_cast<int32_t>(rows));
  ASSERT_EQ(back.o.size(), ev.size() * rows * hd);
  for (size_t i = 0; i < ev.size(); ++i)
    EXPECT_TRUE(test::same_bits(&back.o[i * rows * hd], &ev.o[i * reserved * hd], rows * hd * 4)) << i;

  const std::optional<HeadInputs> in = t.read_inputs();
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->q_pairs, r.inputs.q_pairs);
  EXPECT_EQ(in->kv_pairs, r.inputs.kv_pairs);
  expect_same_tensor(in->q, r.inputs.q);
  expect_same_tensor(in->k, r.inputs.k);
  expect_same_tensor(in->v, r.inputs.v);
  const std::optional<HostTensor> out = t.read_output();
  ASSERT_TRUE(out.has_value());
  expect_same_tensor(*out, r.output);
  const std::optional<std::vector<float>> lse = t.read_output_lse();
  ASSERT_TRUE(lse.has_value());
  ASSERT_EQ(lse->size(), r.output_lse.size());
  EXPECT_TRUE(test::same_bits(lse->data(), r.output_lse.data(), lse->size() * 4));
  const TensorView<double> extra = t.file().view<double>("my.extra");
  ASSERT_EQ(extra.size(), r.extra.size());
  EXPECT_TRUE(test::same_bits(extra.data(), r.extra.data(), r.extra.size() * 8));
}

TEST(TraceFile, EmptyTraceWithoutInputsRoundTrips) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  CapturedEvents ev;
  ev.max_rows = 64;
  ev.head_dim = 128;
  ev.stages = test::random_stage_table(rng);
  ev.dropped = 17;
  ev.requested = 17;
  const AttentionSpec spec = test::random_spec(rng, 128);
  write_trace(dir / "e.safetensors", {.events = &ev, .attention = spec});
  const TraceFile t = TraceFile::open(dir / "e.safetensors");
  EXPECT_EQ(t.num_events(), 0u);
  EXPECT_TRUE(t.missing().empty());
  EXPECT_EQ(t.dropped_events(), 17u);
  EXPECT_EQ(t.stages(), ev.stages);
  EXPECT_EQ(t.attention(), spec);
  EXPECT_EQ(t.events_per_stage(), std::vector<size_t>(ev.stages.size(), 0));
  EXPECT_FALSE(t.has_inputs());
  EXPECT_FALSE(t.read_inputs().has_value());
  EXPECT_FALSE(t.read_output().has_value());
  EXPECT_FALSE(t.read_output_lse().has_value());
}

TEST(TraceFile, StagesDeclaredWithoutPassesTakeTheDefaultPasses) {
  // A hand-made table may leave passes out: states 0, merges 1, the final the latest other.
  EXPECT_EQ(parse_stage_table(R"([{"name": "p", "kind": "state"}, {"name": "f", "kind": "final"},
                                  {"name": "m", "kind": "merge"}])"),
            (std::vector<StageInfo>{{"p", StageKind::state, 0}, {"f", StageKind::final, 1}, {"m", StageKind::merge, 1}}));
  EXPECT_EQ(parse_stage_table(R"([{"name": "step", "kind": "state", "pass": 3}, {"name": "out", "kind": "final"}])"),
            (std::vector<StageInfo>{{"step", StageKind::state, 3}, {"out", StageKind::final, 3}}));
}

TEST(TraceFile, StagePassesRunFrom0To1000) {
  // trace_event.cpp's kMaxStagePass, which the Python package states again (tilescope.trace.
  // MAX_STAGE_PASS; its test_hostile.py checks the same boundary through the CLI): 1000 is the
  // largest pass; 1001, -1 and what is not an integer are refused.
  EXPECT_EQ(parse_stage_table(R"([{"name": "s", "kind": "state", "pass": 1000}])"),
            (std::vector<StageInfo>{{"s", StageKind::state, 1000}}));
  for (const char* bad : {"1001", "-1", "4294967296", "1.5"}) {
    try {
      parse_stage_table(std::string(R"([{"name": "s", "kind": "state", "pass": )") + bad + "}]");
      ADD_FAILURE() << "accepted pass " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("a pass that is not an integer in [0, 1000]"), std::string::npos) << e.what();
    }
  }
}

TEST(TraceFile, StageFlagsRoundTripAndAreCheckedWhenRead) {
  // p_rounded and exp2_folded: written only where true; absent reads false; anything but a boolean
  // is refused.
  const std::vector<StageInfo> table{{"fa2.step", StageKind::state, 0, true, true},
                                     {"mine", StageKind::state, 0, false, true},
                                     {"final", StageKind::final, 0}};
  const std::string json = stage_table_json(table);
  EXPECT_NE(json.find("\"p_rounded\":true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"exp2_folded\":true"), std::string::npos) << json;
  EXPECT_EQ(json.find("p_rounded", json.find("mine")), std::string::npos) << json;
  EXPECT_EQ(json.find("exp2_folded", json.find("final")), std::string::npos) << json;
  EXPECT_EQ(parse_stage_table(json), table);
  const StageInfo plain = parse_stage_table(R"([{"name": "s", "kind": "state"}])")[0];
  EXPECT_FALSE(plain.p_rounded);
  EXPECT_FALSE(plain.exp2_folded);
  for (const std::string flag : {"p_rounded", "exp2_folded"}) {
    try {
      parse_stage_table(R"([{"name": "s", "kind": "state", ")" + flag + R"(": 1}])");
      ADD_FAILURE() << "accepted a " << flag << " that is not a boolean";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(flag + " that is not true or false"), std::string::npos) << e.what();
    }
  }
}

TEST(TraceFile, AFormat1InputsTensorInAFormat2FileIsNotTakenForInputs) {
  // "inputs.pairs" is format 1's name; a format 2 file that carries one (and none of format 2's
  // inputs) has no inputs: has_inputs() must not promise what read_inputs() cannot read.
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  const RandomTrace r = make_random_trace(rng, 5);
  TraceContents c = contents_of(r);
  c.inputs = nullptr;
  write_trace(dir / "t.safetensors", c);
  test::EditableFile f = test::EditableFile::load(dir / "t.safetensors");
  const int32_t pair[2] = {0, 0};
  f.tensors.push_back({"inputs.pairs", ElemType::I32, {1, 2}, {reinterpret_cast<const std::byte*>(pair),
                                                                reinterpret_cast<const std::byte*>(pair) + 8}});
  f.save(dir / "stray.safetensors");
  const TraceFile t = TraceFile::open(dir / "stray.safetensors");
  EXPECT_FALSE(t.has_inputs());
  EXPECT_FALSE(t.read_inputs().has_value());
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

TEST(TraceFileWrite, RefusesAPayloadTheReaderWouldRefuse) {
  // The reader takes max_rows up to 65536; a trace with more rows per event must not be written.
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  CapturedEvents ev;
  ev.stages = test::random_stage_table(rng);
  ev.max_rows = 65537;
  ev.head_dim = 8;
  const AttentionSpec spec = test::random_spec(rng, 8);
  expect_write_refused(dir, {.events = &ev, .attention = spec}, "max_rows 65537");
  ev.max_rows = 65536;  // the largest the reader takes
  write_trace(dir / "w.safetensors", {.events = &ev, .attention = spec});
  EXPECT_EQ(TraceFile::open(dir / "w.safetensors").max_rows(), 65536);
}

// A trace replaces only nothing, an empty file or a trace: a typo in -o must not turn someone's
// notes (random bytes here), a safetensors file of other tensors, or a file a symbolic link leads
// to into a trace. Each refused file is left as it was, and no temporary file is left beside it.
TEST(TraceFileWrite, ReplacesOnlyATraceOrAnEmptyFile) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  CapturedEvents ev;
  ev.max_rows = 8;
  ev.head_dim = 16;
  ev.stages = test::random_stage_table(rng);
  const AttentionSpec spec = test::random_spec(rng, 16);
  const TraceContents c{.events = &ev, .attention = spec};
  auto write_bytes = [](const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
  };
  auto read_bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto refused = [&](const std::filesystem::path& p, const std::string& why) {
    SCOPED_TRACE(p.filename().string());
    const std::string before = read_bytes(p);
    const size_t entries = dir.entries().size();
    try {
      write_trace(p, c);
      ADD_FAILURE() << "replaced";
    } catch (const FileWriteError& e) {
      EXPECT_NE(std::string(e.what()).find("is not a tilescope trace (" + why), std::string::npos) << e.what();
    }
    EXPECT_EQ(read_bytes(p), before);
    EXPECT_EQ(dir.entries().size(), entries) << "a temporary file left behind";
  };
  std::string notes(1 + rng() % 3000, '\0');
  for (char& ch : notes) ch = static_cast<char>(rng());
  write_bytes(dir / "notes.txt", notes);
  refused(dir / "notes.txt", "");
  write_bytes(dir / "short.bin", notes.substr(0, 5));
  refused(dir / "short.bin", "too short");
  // A valid safetensors file of something else.
  const std::string header = R"({"__metadata__": {"owner": "someone"}, "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  std::string st(8, '\0');
  for (int i = 0; i < 8; ++i) st[size_t(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  write_bytes(dir / "weights.safetensors", st + header + std::string(8, '\1'));
  refused(dir / "weights.safetensors", "a safetensors file of something else");
  std::filesystem::create_symlink(dir / "notes.txt", dir / "link.safetensors");
  refused(dir / "link.safetensors", "");
  EXPECT_EQ(read_bytes(dir / "notes.txt"), notes);

  // Nothing there, an empty file, and a trace are replaced.
  write_trace(dir / "new.safetensors", c);
  ev.dropped = ev.requested = 1 + rng() % 100;
  write_trace(dir / "new.safetensors", c);
  EXPECT_EQ(TraceFile::open(dir / "new.safetensors").dropped_events(), ev.dropped);
  write_bytes(dir / "empty.safetensors", "");
  write_trace(dir / "empty.safetensors", c);
  EXPECT_EQ(TraceFile::open(dir / "empty.safetensors").dropped_events(), ev.dropped);
}

// The rule holds when the file is replaced, not only when the write starts: a trace that became
// someone's notes during the write is refused just before the rename, and the notes stay (was:
// checked once, before writing).
TEST(TraceFileWrite, ATraceReplacedDuringTheWriteIsCheckedAgainBeforeTheRename) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  RandomTrace r = make_random_trace(rng, 10);
  TraceContents c;
  c.events = &r.events;
  c.attention = r.spec;
  const std::filesystem::path path = dir / "run.trace.safetensors";
  write_trace(path, c);  // a trace: may be replaced
  std::string notes(1 + rng() % 3000, '\0');
  for (char& ch : notes) ch = static_cast<char>(rng());
  bool swapped = false;
  c.progress = [&](uint64_t, uint64_t) {
    if (!swapped) std::ofstream(path, std::ios::binary | std::ios::trunc) << notes;
    swapped = true;
  };
  const size_t entries = dir.entries().size();
  try {
    write_trace(path, c);
    ADD_FAILURE() << "replaced the notes put there during the write";
  } catch (const FileWriteError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a tilescope trace"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(swapped) << "no progress call: nothing was swapped";
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), notes);
  EXPECT_EQ(dir.entries().size(), entries) << "a temporary file left behind";
}

TEST(TraceFileWrite, RefusesInconsistentContents) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  RandomTrace r = make_random_trace(rng, 10);
  const auto with_events = [&](const CapturedEvents& ev) {
    TraceContents c;
    c.events = &ev;
    c.attention = r.spec;
    return c;
  };
  {
    CapturedEvents ev = r.events;
    ev.o.pop_back();
    expect_write_refused(dir, with_events(ev), "do not match 10 events");
  }
  {
    CapturedEvents ev = r.events;
    ev.headers[3].stage = static_cast<int32_t>(ev.stages.size());
    expect_write_refused(dir, with_events(ev), "event 3: stage = " + std::to_string(ev.stages.size()));
  }
  {
    CapturedEvents ev = r.events;
    ev.headers[4].rows = ev.max_rows + 1;
    expect_write_refused(dir, with_events(ev), "event 4: rows");
  }
  {
    CapturedEvents ev = r.events;
    ev.missing[0].num_key_ranges = 1;
    ev.missing[0].keys[0] = {0, static_cast<int32_t>(r.spec.seq_kv) + 1};
    expect_write_refused(dir, with_events(ev), "missing event 0: key range 0");
  }
  {
    CapturedEvents ev = r.events;
    ev.stages.push_back(ev.stages.front());
    expect_write_refused(dir, with_events(ev), "declared twice");
  }
  {
    TraceContents c = with_events(r.events);
    c.attention.heads_kv = c.attention.heads_q + 1;
    expect_write_refused(dir, c, "the attention description is invalid");
  }
  {
    TraceContents c = with_events(r.events);
    c.metadata = {{"dropped_events", "0"}};
    expect_write_refused(dir, c, "reserved for the trace writer");
  }
  {
    TraceContents c = with_events(r.events);
    HeadInputs bad = r.inputs;
    bad.k.shape[2] += 1;
    c.inputs = &bad;
    expect_write_refused(dir, c, "inputs.k must be");
  }
  {
    TraceContents c = with_events(r.events);
    HeadInputs bad = r.inputs;
    bad.kv_pairs.push_back(bad.kv_pairs.front());
    c.inputs = &bad;
    expect_write_refused(dir, c, "is given twice");
  }
  std::vector<float> x(3, 1.0f);
  {
    TraceContents c = with_events(r.events);
    c.extra = {{"missing.more", ElemType::F32, {3}, x.data()}};
    expect_write_refused(dir, c, "reserved prefix 'missing.'");
  }
  expect_write_refused(dir, {}, "no events");
}

// ---- hostile traces, each made from a valid one --------------------------------------------

class TraceMalformed : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(test::run_seed());
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
  // The file with one int32 of a column changed.
  test::EditableFile with(const std::string& name, size_t index, int32_t value) {
    auto f = good();
    f.at(name).as<int32_t>()[index] = value;
    return f;
  }
  // The file with metadata `key` set to `value` (removed when nullopt).
  test::EditableFile with_meta(const std::string& key, std::optional<std::string> value) {
    auto f = good();
    if (value) {
      f.metadata[key] = *value;
    } else {
      f.metadata.erase(key);
    }
    return f;
  }
  // The file with the attention description's field `key` set to the JSON `value`.
  test::EditableFile with_attention(const std::string& key, const std::string& value) {
    auto f = good();
    nlohmann::json j = nlohmann::json::parse(f.metadata.at("attention"));
    j[key] = nlohmann::json::parse(value);
    f.metadata["attention"] = j.dump();
    return f;
  }
  const AttentionSpec& spec() const { return trace_.spec; }
  TempDir dir_;
  RandomTrace trace_;
};

TEST_F(TraceMalformed, MissingRequiredTensors) {
  TS_SEED_TRACE();
  for (std::string name : {"events.stage", "events.convention", "events.batch", "events.head", "events.kv_head",
                           "events.q_begin", "events.rows", "events.split", "events.step", "events.block",
                           "events.where", "events.num_key_ranges", "events.key_ranges", "events.time_ns",
                           "events.m", "events.l", "events.o", "missing.rows", "missing.key_ranges"}) {
    auto f = good();
    f.remove(name);
    expect_rejected(f, "required tensor '" + name + "' is missing");
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
  f.metadata["max_rows"] = std::to_string(trace_.events.max_rows + 1);
  expect_rejected(f, "tensor 'events.m' has shape");
  f = good();
  f.at("events.m").type = ElemType::I32;
  expect_rejected(f, "events.m");
  f = good();
  f.at("events.stage").shape = {4, 10};
  expect_rejected(f, "must be 1-D");
  f = good();
  auto& ranges = f.at("events.key_ranges");
  ranges.shape = {40, ranges.shape[1] * 2, 1};
  expect_rejected(f, "tensor 'events.key_ranges' has shape");
}

TEST_F(TraceMalformed, EventsOutsideTheStageTableOrTheAttention) {
  TS_SEED_TRACE();
  const auto stages = static_cast<int32_t>(trace_.events.stages.size());
  expect_rejected(with("events.stage", 7, stages), "event 7: stage = " + std::to_string(stages));
  expect_rejected(with("events.stage", 0, -1), "event 0: stage = -1");
  expect_rejected(with("missing.stage", 0, stages + 5), "missing event 0: stage");
  expect_rejected(with("events.convention", 3, 16), "event 3: convention = 16");
  expect_rejected(with("events.convention", 4, -1), "event 4: convention = -1");
  expect_rejected(with("events.rows", 39, trace_.events.max_rows + 1), "event 39: rows");
  expect_rejected(with("events.rows", 5, -3), "event 5: rows = -3");
  expect_rejected(with("events.batch", 2, -1), "event 2: batch = -1");
  expect_rejected(with("events.batch", 2, static_cast<int32_t>(spec().batch)), "event 2: batch");
  expect_rejected(with("events.head", 2, static_cast<int32_t>(spec().heads_q)), "event 2: head");
  expect_rejected(with("events.kv_head", 8, static_cast<int32_t>(spec().heads_kv)), "event 8: kv_head");
  expect_rejected(with("events.kv_head", 8, -2), "event 8: kv_head = -2");
  expect_rejected(with("events.q_begin", 9, -2), "event 9: q_begin = -2");
  {
    // Rows inside max_rows but past the end of the queries.
    auto f = good();
    f.at("events.rows").as<int32_t>()[10] = 1;
    f.at("events.q_begin").as<int32_t>()[10] = static_cast<int32_t>(spec().seq_q);
    expect_rejected(f, "event 10: q_begin = " + std::to_string(spec().seq_q));
  }
  expect_rejected(with("events.split", 9, -2), "event 9: split = -2");
  expect_rejected(with("events.step", 9, -1), "event 9: step = -1");
  expect_rejected(with("events.block", 11, -7), "event 11: block = -7");
  expect_rejected(with("events.where", 12, -2), "event 12: where = -2");
}

TEST_F(TraceMalformed, KeyRanges) {
  TS_SEED_TRACE();
  const auto r = static_cast<int32_t>(good().at("events.key_ranges").shape[1]);
  const auto seq_kv = static_cast<int32_t>(spec().seq_kv);
  // Event 6 with one range [begin, end).
  const auto range = [&](int32_t begin, int32_t end) {
    auto f = good();
    f.at("events.num_key_ranges").as<int32_t>()[6] = 1;
    f.at("events.key_ranges").as<int32_t>()[6 * r * 2] = begin;
    f.at("events.key_ranges").as<int32_t>()[6 * r * 2 + 1] = end;
    return f;
  };
  EXPECT_NO_THROW(range(seq_kv, seq_kv).save(dir_ / "ok.safetensors"));
  EXPECT_NO_THROW(TraceFile::open(dir_ / "ok.safetensors")) << "an empty range at the end is a range";
  expect_rejected(range(-1, 3), "event 6: key range 0 = [-1, 3)");
  expect_rejected(range(0, seq_kv + 1), "event 6: key range 0 = [0, " + std::to_string(seq_kv + 1) + ")");
  expect_rejected(range(5, 4), "event 6: key range 0 = [5, 4)");
  expect_rejected(range(seq_kv + 1, seq_kv + 1), "must lie in [0, seq_kv");
  expect_rejected(with("events.num_key_ranges", 6, r + 1),
                  "event 6: num_key_ranges = " + std::to_string(r + 1) + " (the file stores " + std::to_string(r));
  expect_rejected(with("events.num_key_ranges", 6, -1), "event 6: num_key_ranges = -1");
  // A file that stores more ranges per event than an event can hold.
  auto f = good();
  auto& ranges = f.at("events.key_ranges");
  ranges.shape = {40, kMaxKeyRanges + 1, 2};
  ranges.bytes.assign(size_t(40 * (kMaxKeyRanges + 1) * 2 * 4), std::byte{0});
  expect_rejected(f, "with 1 <= R <= " + std::to_string(kMaxKeyRanges));
}

TEST_F(TraceMalformed, Metadata) {
  TS_SEED_TRACE();
  expect_rejected(with_meta("tilescope_format", std::nullopt), "'tilescope_format' is missing");
  expect_rejected(with_meta("tilescope_format", "3"), "trace format '3' is not supported");
  expect_rejected(with_meta("max_rows", "abc"), "'max_rows' = 'abc' is not a whole number");
  expect_rejected(with_meta("head_dim", "99999999"), "is not a whole number");
  expect_rejected(with_meta("head_dim", std::to_string(spec().head_dim + 1)), "differs from the attention");
  expect_rejected(with_meta("dropped_events", "-1"), "'dropped_events' = '-1'");
  expect_rejected(with_meta("requested_events", ""), "'requested_events' = ''");
  expect_rejected(with_meta("max_rows", std::nullopt), "'max_rows' is missing");
  expect_rejected(with_meta("stages", std::nullopt), "'stages' (the stage table) is missing");
  expect_rejected(with_meta("attention", std::nullopt), "'attention' (the attention description) is missing");
}

TEST_F(TraceMalformed, StageTables) {
  TS_SEED_TRACE();
  expect_rejected(with_meta("stages", R"({"name": "p", "kind": "state"})"), "the stage table is not a JSON list");
  expect_rejected(with_meta("stages", "[{\"name\": \"p\", "), "the stage table is not a JSON list");
  expect_rejected(with_meta("stages", "[]"), "the stage table is empty");
  expect_rejected(with_meta("stages", R"([{"name": "p", "kind": "state"}, {"name": "p", "kind": "merge"}])"),
                  "stage name 'p' is declared twice");
  expect_rejected(with_meta("stages", R"([{"name": "p", "kind": "reduce"}])"), "unknown kind 'reduce'");
  expect_rejected(with_meta("stages", R"([{"name": "p"}])"), "has no kind");
  expect_rejected(with_meta("stages", R"([{"kind": "state"}])"), "stage 0 has no name");
  expect_rejected(with_meta("stages", R"([{"name": "", "kind": "state"}])"), "name must be 1 to 64 bytes");
  expect_rejected(with_meta("stages", R"([{"name": "a\u0001b", "kind": "state"}])"), "control character");
  expect_rejected(with_meta("stages", R"([{"name": "p", "kind": "state", "pass": -1}])"), "has a pass that is not");
  expect_rejected(with_meta("stages", R"([{"name": "p", "kind": "state", "pass": 18446744073709551615}])"),
                  "has a pass that is not");
  expect_rejected(with_meta("stages", R"(["p"])"), "stage 0 is not a JSON object");
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 65; ++i) many.push_back({{"name", "s" + std::to_string(i)}, {"kind", "state"}});
  expect_rejected(with_meta("stages", many.dump()), "declares 65 stages; at most 64");
  // A valid table too short for the events' stage indices.
  auto f = good();
  std::fill_n(f.at("events.stage").as<int32_t>(), 40, 0);
  f.at("events.stage").as<int32_t>()[5] = 1;
  f.metadata["stages"] = R"([{"name": "only", "kind": "state"}])";
  expect_rejected(f, "event 5: stage = 1 (the stage table has 1 stages)");
}

TEST_F(TraceMalformed, AttentionDescriptions) {
  TS_SEED_TRACE();
  expect_rejected(with_meta("attention", "not json"), "metadata 'attention'");
  expect_rejected(with_meta("attention", "[1, 2]"), "must be a JSON object");
  expect_rejected(with_attention("heads_kv", std::to_string(spec().heads_q + 1)), "metadata 'attention'");
  {
    // heads_q not a multiple of heads_kv.
    auto f = good();
    nlohmann::json j = nlohmann::json::parse(f.metadata.at("attention"));
    j["heads_q"] = 3;
    j["heads_kv"] = 2;
    f.metadata["attention"] = j.dump();
    expect_rejected(f, "must be a multiple of heads_kv");
  }
  expect_rejected(with_attention("batch", "18446744073709551615"), "attention field 'batch' must be an integer");
  expect_rejected(with_attention("seq_kv", "9223372036854775807"), "seq_kv");
  expect_rejected(with_attention("seq_q", "-5"), "seq_q");
  expect_rejected(with_attention("head_dim", "0"), "head_dim");
  expect_rejected(with_attention("batch", "1.5"), "attention field 'batch' must be an integer");
  expect_rejected(with_attention("dtype", "\"fp8\""), "unknown dtype");
  expect_rejected(with_attention("scale", "-1"), "scale");
  expect_rejected(with_attention("causal", "\"sideways\""), "causal");
  expect_rejected(with_attention("kv_lens", "[-1]"), "kv_lens");
  // Sizes that overflow when multiplied (each one in range).
  {
    auto f = good();
    nlohmann::json j = nlohmann::json::parse(f.metadata.at("attention"));
    j["batch"] = 1 << 20;
    j["heads_q"] = j["heads_kv"] = 1 << 10;
    j["seq_q"] = j["seq_kv"] = 1 << 24;
    f.metadata["attention"] = j.dump();
    expect_rejected(f, "metadata 'attention'");
  }
}

TEST_F(TraceMalformed, InputsAndOutput) {
  TS_SEED_TRACE();
  for (std::string name : {"inputs.q_pairs", "inputs.kv_pairs", "inputs.q", "inputs.k", "inputs.v"}) {
    auto f = good();
    f.remove(name);
    expect_rejected(f, "inputs are incomplete");
  }
  auto f = good();
  f.at("inputs.q_pairs").as<int32_t>()[1] = -1;
  expect_rejected(f, "tensor 'inputs.q_pairs' holds (batch, query head)");
  f = good();
  f.at("inputs.kv_pairs").as<int32_t>()[1] = static_cast<int32_t>(spec().heads_kv);
  expect_rejected(f, "tensor 'inputs.kv_pairs' holds (batch, kv head)");
  {
    // A pair given twice: the second copy of the first pair (the tensors keep their shapes).
    f = good();
    auto& pairs = f.at("inputs.q_pairs");
    if (pairs.shape[0] >= 2) {
      pairs.as<int32_t>()[2] = pairs.as<int32_t>()[0];
      pairs.as<int32_t>()[3] = pairs.as<int32_t>()[1];
      expect_rejected(f, "twice");
    }
  }
  {
    f = good();
    auto& pairs = f.at("inputs.kv_pairs");
    pairs.shape = {pairs.shape[0] * 2, 2};
    pairs.bytes.insert(pairs.bytes.end(), pairs.bytes.begin(), pairs.bytes.end());
    expect_rejected(f, "twice");
  }
  f = good();
  f.at("inputs.q_pairs").shape = {f.at("inputs.q_pairs").shape[0] * 2, 1};
  expect_rejected(f, "must be [P, 2]");
  f = good();
  auto& k = f.at("inputs.k");
  k.shape = {k.shape[0], k.shape[1] * k.shape[2], 1};
  expect_rejected(f, "tensor 'inputs.k' has shape");
  f = good();
  auto& v = f.at("inputs.v");
  v.shape = {v.shape[0], v.shape[1] + 1, v.shape[2]};
  v.bytes.resize(v.bytes.size() + size_t(v.shape[2]) * elem_size(v.type));
  expect_rejected(f, "tensor 'inputs.v' has shape");
  f = good();
  auto& q = f.at("inputs.q");
  q.type = q.type == ElemType::F32 ? ElemType::I32 : ElemType::I16;
  expect_rejected(f, "tensor 'inputs.q' has dtype");
  {
    // Another float dtype than the attention description's.
    f = good();
    auto& k2 = f.at("inputs.k");
    if (k2.type != ElemType::F32) {
      k2.type = k2.type == ElemType::F16 ? ElemType::BF16 : ElemType::F16;
      expect_rejected(f, "tensor 'inputs.k' has dtype");
    }
  }
  f = good();
  auto& o = f.at("output.o");
  o.shape = {o.shape[0] * o.shape[1], o.shape[2], o.shape[3]};
  expect_rejected(f, "tensor 'output.o' has shape");
  f = good();
  f.at("output.lse").type = ElemType::I32;
  expect_rejected(f, "tensor 'output.lse' must be F32");
}

}  // namespace
}  // namespace ts
