// open_run: a saved capture opens as the same RunView run_view_from_capture gave for the
// launch, and traces whose metadata, events, inputs or output do not fit their config are
// refused with an error naming the file and the problem.
#include <gtest/gtest.h>

#include "kernels/kernel_stages.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "app/model/capture/run_capture.h"
#include "app/model/trace_session.h"
#include "instrumentation/trace/file_error.h"
#include "tests/model/capture_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

bool same_floats(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

TEST(TraceSession, OpenRunEqualsTheViewOfTheSameLaunch) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  for (int round = 0; round < 4; ++round) {
    CaptureSpec spec;
    spec.config = test::random_small_config(rng, /*with_fault=*/true);
    spec.backend = Backend::cpu;
    spec.inputs = RandomInputSpec{.seed = rng(), .distribution = InputDistribution::uniform};
    if (round == 3) {  // a filtered capture: a subset of heads and stages
      spec.trace.filter.head_end = 1;
      spec.trace.filter.stage_mask =
          uint64_t{1} << (spec.config.kernel == KernelKind::fa1 ? kFa1FinalStage : kSplitkFinalStage);
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
    EXPECT_EQ(a.attention, b.attention);
    EXPECT_EQ(a.stages, b.stages);
    EXPECT_EQ(a.max_rows, b.max_rows);
    EXPECT_EQ(a.head_dim, b.head_dim);
    EXPECT_EQ(a.dropped_events, b.dropped_events);
    ASSERT_EQ(a.num_events(), b.num_events());
    ASSERT_EQ(a.recorded_events, b.recorded_events);
    EXPECT_EQ(std::memcmp(a.headers.data(), b.headers.data(), a.headers.size() * sizeof(EventHeader)), 0);
    EXPECT_EQ(a.missing.size(), b.missing.size());
    EXPECT_TRUE(same_floats(a.m, b.m));
    EXPECT_TRUE(same_floats(a.l, b.l));
    EXPECT_TRUE(same_floats(a.o, b.o));
    EXPECT_TRUE(same_floats(a.appended_o, b.appended_o));  // the output's events
    EXPECT_EQ(a.inputs.q_pairs, b.inputs.q_pairs);
    EXPECT_EQ(a.inputs.kv_pairs, b.inputs.kv_pairs);
    EXPECT_TRUE(test::same_bytes(a.inputs.q, b.inputs.q));
    EXPECT_TRUE(test::same_bytes(a.inputs.k, b.inputs.k));
    EXPECT_TRUE(test::same_bytes(a.inputs.v, b.inputs.v));
    ASSERT_TRUE(a.output && b.output);
    EXPECT_TRUE(test::same_bytes(*a.output, *b.output));
    ASSERT_TRUE(a.output_lse && b.output_lse);
    EXPECT_TRUE(same_floats(*a.output_lse, *b.output_lse));  // bit for bit: a faulty kernel's NaN too
    if (round == 3) {
      EXPECT_EQ(b.inputs.q_index(0, 0), 0);
      if (spec.config.heads > 1) {
        EXPECT_EQ(b.inputs.q_index(0, 1), -1);
      }
    }
  }
}

TEST(TraceSession, ViewOutlivesEverythingButItsOwner) {
  TS_SEEDED(seed);
  test::TempDir dir;
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
    spec.inputs = RandomInputSpec{.seed = ::ts::test::test_seed()};
    result_ = run_capture(spec);
    events_ = *result_.events;
    attention_ = result_.view.attention;
    inputs_ = result_.view.inputs;
    output_ = *result_.view.output;
    metadata_ = result_.view.metadata;
  }
  void write(const std::filesystem::path& path) {
    write_trace(path, {.events = &events_,
                       .attention = attention_,
                       .metadata = metadata_,
                       .inputs = &inputs_,
                       .output = &output_});
  }
  // The reader refuses what the writer wrote.
  void expect_refused(const std::string& message) {
    const auto path = dir_.path() / "damaged.trace.safetensors";
    write(path);
    try {
      open_run(path);
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const TraceFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("damaged.trace.safetensors"), std::string::npos) << e.what();
    }
  }
  // The writer refuses to write it at all (and leaves no file).
  void expect_not_written(const std::string& message) {
    const auto path = dir_.path() / "refused.trace.safetensors";
    try {
      write(path);
      ADD_FAILURE() << "written; expected: " << message;
    } catch (const FileWriteError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  ::ts::test::TempDir dir_;
  CaptureResult result_;
  CapturedEvents events_;
  AttentionSpec attention_;
  HeadInputs inputs_;
  HostTensor output_;
  std::map<std::string, std::string> metadata_;
};

TEST_F(DamagedTrace, Undamaged) {
  const auto path = dir_.path() / "fine.trace.safetensors";
  write(path);
  EXPECT_EQ(open_run(path).recorded_events, events_.size());
}

TEST_F(DamagedTrace, ConfigAndTilingAreOptionalButMustFit) {
  // Without our kernels' config (a user's kernel) the run opens, with nothing to re-run.
  metadata_.erase("config");
  const auto path = dir_.path() / "no_config.trace.safetensors";
  write(path);
  EXPECT_FALSE(open_run(path).config.has_value());
  SetUp();
  metadata_["config"] = "[1, 2";
  expect_refused("'config' is invalid");
  SetUp();
  auto c = nlohmann::json::parse(metadata_["config"]);
  c["batch"] = 0;
  metadata_["config"] = c.dump();
  expect_refused("batch must be at least 1");
  SetUp();
  c = nlohmann::json::parse(metadata_["config"]);
  c["seq_kv"] = 201;
  metadata_["config"] = c.dump();
  expect_refused("does not fit the attention description");
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

TEST_F(DamagedTrace, EventsOutsideTheAttentionAreNotWritten) {
  events_.headers[1].batch = 2;
  expect_not_written("event 1: batch = 2");
  SetUp();
  events_.headers[0].stage = 7;
  expect_not_written("event 0: stage = 7");
  SetUp();
  events_.headers[2].q_begin = 2;  // rows 2..9 of a 3-row sequence
  expect_not_written("event 2: q_begin = 2");
  SetUp();
  events_.headers[3].rows = 4;
  expect_not_written("event 3: rows = 4");
  SetUp();
  events_.headers[0].keys[0].end = 999;
  expect_not_written("event 0: key range 0 = [");
  SetUp();
  events_.headers[0].convention = 64;
  expect_not_written("event 0: convention = 64");
}

TEST_F(DamagedTrace, InputsAndOutputThatDoNotFitAreNotWritten) {
  inputs_.q_pairs[1] = inputs_.q_pairs[0];
  expect_not_written("twice");
  SetUp();
  inputs_.q_pairs[0] = {0, 5};
  expect_not_written("outside the attention description");
  SetUp();
  output_.shape = {2, 1, 6, 32};
  expect_not_written("the output must be");
  SetUp();
  for (HostTensor* t : {&inputs_.q, &inputs_.k, &inputs_.v}) {
    HostTensor wide = HostTensor::zeros(DType::f32, t->shape);
    for (int64_t i = 0; i < t->numel(); ++i) wide.set_float(i, t->get_float(i));
    *t = wide;
  }
  expect_not_written("inputs.q is fp32");
}

}  // namespace
}  // namespace ts
