// open_run: a saved capture opens as the same RunView run_view_from_capture gave for the
// launch, and traces whose metadata, events, inputs or output do not fit their config are
// refused with an error naming the file and the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "app/model/capture/run_capture.h"
#include "app/model/trace_session.h"
#include "instrumentation/trace/file_error.h"
#include "tests/model/capture_test_util.h"
#include "tests/model/temp_dir.h"
#include "tests/model/test_seed.h"

namespace ts {
namespace {

bool same_floats(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

TEST(TraceSession, OpenRunEqualsTheViewOfTheSameLaunch) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  testing::TempDir dir;
  for (int round = 0; round < 4; ++round) {
    CaptureSpec spec;
    spec.config = testing::random_small_config(rng, /*with_fault=*/true);
    spec.backend = Backend::cpu;
    spec.inputs = RandomInputSpec{.seed = rng(), .distribution = InputDistribution::uniform};
    if (round == 3) {  // a filtered capture: a subset of heads and stages
      spec.trace.filter.head_end = 1;
      spec.trace.filter.stage_mask = stage_bit(Stage::final_output);
    }
    SCOPED_TRACE(nlohmann::json(spec.config).dump());
    const CaptureResult r = run_capture(spec);
    const auto path = dir.path() / ("r" + std::to_string(round) + ".trace.safetensors");
    save_trace(r, path);
    const RunView a = r.view, b = open_run(path);

    EXPECT_EQ(b.label, path.filename().string());
    EXPECT_EQ(a.config, b.config);
    EXPECT_EQ(a.tiling, b.tiling);
    for (const auto& [key, value] : a.metadata) EXPECT_EQ(b.metadata.at(key), value) << key;
    EXPECT_EQ(b.metadata.at("dropped_events"), std::to_string(a.dropped_events));
    EXPECT_EQ(a.block_m, b.block_m);
    EXPECT_EQ(a.head_dim, b.head_dim);
    EXPECT_EQ(a.dropped_events, b.dropped_events);
    ASSERT_EQ(a.num_events(), b.num_events());
    EXPECT_EQ(std::memcmp(a.headers.data(), b.headers.data(), a.headers.size() * sizeof(EventHeader)), 0);
    EXPECT_TRUE(same_floats(a.m, b.m));
    EXPECT_TRUE(same_floats(a.l, b.l));
    EXPECT_TRUE(same_floats(a.o, b.o));
    EXPECT_EQ(a.inputs.pairs, b.inputs.pairs);
    EXPECT_TRUE(testing::same_bytes(a.inputs.q, b.inputs.q));
    EXPECT_TRUE(testing::same_bytes(a.inputs.k, b.inputs.k));
    EXPECT_TRUE(testing::same_bytes(a.inputs.v, b.inputs.v));
    ASSERT_TRUE(a.output && b.output);
    EXPECT_TRUE(testing::same_bytes(*a.output, *b.output));
    if (round == 3) {
      EXPECT_EQ(b.pair_index(0, 0), 0);
      if (spec.config.heads > 1) {
        EXPECT_EQ(b.pair_index(0, 1), -1);
      }
    }
  }
}

TEST(TraceSession, ViewOutlivesEverythingButItsOwner) {
  TS_SEEDED(seed);
  testing::TempDir dir;
  CaptureSpec spec;
  spec.config.seq_q = 70;
  spec.config.seq_kv = 70;
  spec.config.head_dim = 32;
  spec.backend = Backend::cpu;
  spec.inputs = RandomInputSpec{.seed = seed};
  const auto path = dir.path() / "t.trace.safetensors";
  std::vector<float> first_o;
  {
    const CaptureResult r = run_capture(spec);
    save_trace(r, path);
    first_o.assign(r.view.o.begin(), r.view.o.end());
  }
  RunView copy;
  {
    const RunView opened = open_run(path);
    copy = opened;  // shares the mapping through payload_owner
  }
  std::filesystem::remove(path);  // the mapping stays valid after the name goes
  ASSERT_EQ(copy.o.size(), first_o.size());
  EXPECT_TRUE(same_floats(copy.o, first_o));
}

// Rewrites a real capture with one thing damaged, and checks open_run names it.
class DamagedTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    CaptureSpec spec;
    spec.config.kernel = KernelKind::splitk;
    spec.config.batch = 2;
    spec.config.heads = 2;
    spec.config.seq_q = 3;
    spec.config.seq_kv = 200;
    spec.config.head_dim = 32;
    spec.config.dtype = DType::f16;
    spec.config.num_splits = 2;
    spec.backend = Backend::cpu;
    spec.inputs = RandomInputSpec{.seed = ::ts::testing::test_seed()};
    result_ = run_capture(spec);
    events_ = *result_.events;
    inputs_ = result_.view.inputs;
    output_ = *result_.view.output;
    metadata_ = result_.view.metadata;
  }
  void expect_refused(const std::string& message) {
    const auto path = dir_.path() / "damaged.trace.safetensors";
    write_trace(path, {.events = &events_, .metadata = metadata_, .inputs = &inputs_, .output = &output_});
    try {
      open_run(path);
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const TraceFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("damaged.trace.safetensors"), std::string::npos) << e.what();
    }
  }
  ::ts::testing::TempDir dir_;
  CaptureResult result_;
  CapturedEvents events_;
  TraceInputs inputs_;
  HostTensor output_;
  std::map<std::string, std::string> metadata_;
};

TEST_F(DamagedTrace, Undamaged) {
  const auto path = dir_.path() / "fine.trace.safetensors";
  write_trace(path, {.events = &events_, .metadata = metadata_, .inputs = &inputs_, .output = &output_});
  EXPECT_EQ(open_run(path).num_events(), events_.size());
}

TEST_F(DamagedTrace, MissingOrInvalidConfigAndTiling) {
  metadata_.erase("config");
  expect_refused("no 'config'");
  SetUp();
  metadata_.erase("tiling");
  expect_refused("no 'tiling'");
  SetUp();
  metadata_["config"] = "[1, 2";
  expect_refused("'config' is not valid JSON");
  SetUp();
  auto c = nlohmann::json::parse(metadata_["config"]);
  c["batch"] = 0;
  metadata_["config"] = c.dump();
  expect_refused("batch must be at least 1");
  SetUp();
  c = nlohmann::json::parse(metadata_["config"]);
  c["num_splits"] = 3;
  metadata_["config"] = c.dump();
  expect_refused("does not match 'config'");
  SetUp();
  auto t = nlohmann::json::parse(metadata_["tiling"]);
  t["block_m"] = "64";
  metadata_["tiling"] = t.dump();
  expect_refused("'tiling' is invalid");
}

TEST_F(DamagedTrace, EventsOutsideTheRun) {
  events_.headers[1].batch = 2;
  expect_refused("event 1: batch 2 >= 2");
  SetUp();
  events_.headers[0].stage = static_cast<int32_t>(Stage::fa1_step);
  expect_refused("not a stage of the splitk kernel");
  SetUp();
  events_.headers.back().split = 2;
  expect_refused("split 2 >= 2");
  SetUp();
  events_.headers[2].q_tile = 1;
  expect_refused("query tile 1 >= 1");
  SetUp();
  events_.headers[3].rows = 2;
  expect_refused("rows 2");
  SetUp();
  events_.headers[0].kv_tile_end = 99;
  expect_refused("kv tile end 99");
}

TEST_F(DamagedTrace, InputsAndOutputThatDoNotFit) {
  inputs_.pairs[1] = inputs_.pairs[0];
  expect_refused("twice");
  SetUp();
  inputs_.pairs[0] = {0, 5};
  expect_refused("outside the run");
  SetUp();
  output_.shape = {2, 1, 6, 32};
  expect_refused("output.o");
  SetUp();
  for (HostTensor* t : {&inputs_.q, &inputs_.k, &inputs_.v}) {
    HostTensor wide = HostTensor::zeros(DType::f32, t->shape);
    for (int64_t i = 0; i < t->numel(); ++i) wide.set_float(i, t->get_float(i));
    *t = wide;
  }
  expect_refused("inputs are fp32");
}

}  // namespace
}  // namespace ts
