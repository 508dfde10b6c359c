// The one check of a capture request (app/model/capture/capture_check.h): random valid
// requests pass; each kind of bad value is refused as one problem naming its field, in words of
// neither front end; and index ranges typed as text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/model/capture/capture_check.h"
#include "app/model/capture/capture_error.h"
#include "app/model/capture/capture_metadata.h"
#include "kernels/kernel_stages.h"
#include "tests/model/capture_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

int64_t pick(std::mt19937_64& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

// A random range of [0, size) as the filter holds it: open-ended or not, never empty.
std::pair<int32_t, int32_t> random_range(std::mt19937_64& rng, int64_t size) {
  if (pick(rng, 0, 2) == 0) return {0, kOpenRangeEnd};
  const int64_t begin = pick(rng, 0, size - 1);
  if (pick(rng, 0, 1) == 0) return {static_cast<int32_t>(begin), kOpenRangeEnd};
  return {static_cast<int32_t>(begin), static_cast<int32_t>(std::min<int64_t>(begin + pick(rng, 1, size + 3), kOpenRangeEnd))};
}

// A valid request drawn at random: any kernel (FA-2 with its dtypes and head dims), random or
// file inputs (files made in `dir`), filters within the sizes, a subset of the stages, any
// capacity, workers and perturbation seed that fit the backend.
CaptureSpec random_valid_spec(std::mt19937_64& rng, const std::filesystem::path& dir) {
  CaptureSpec s;
  s.config = test::random_small_config(rng, /*with_fault=*/pick(rng, 0, 1) == 1);
  if (pick(rng, 0, 3) == 0) {  // FA-2: 16-bit, head dim 64 or 128, its own faults
    s.config.kernel = KernelKind::fa2;
    s.config.dtype = pick(rng, 0, 1) ? DType::f16 : DType::bf16;
    s.config.head_dim = pick(rng, 0, 1) ? 64 : 128;
    s.config.num_splits = 0;
    if (!fault_applies(s.config.fault, KernelKind::fa2)) s.config.fault = Fault::none;
  }
  s.backend = static_cast<Backend>(pick(rng, 0, 2));
  if (pick(rng, 0, 3) == 0) {
    InputFiles files;
    const int n = pick(rng, 0, 1) ? 1 : 3;
    for (int i = 0; i < n; ++i) {
      files.paths.push_back(dir / ("input" + std::to_string(i) + ".npy"));
      std::ofstream(files.paths.back()) << "contents are the capture's to read";
    }
    s.inputs = files;
  } else {
    RandomInputSpec r;
    r.seed = rng();
    r.scale = std::uniform_real_distribution<double>(1e-3, 1e3)(rng);
    r.distribution = static_cast<InputDistribution>(pick(rng, 0, 1));
    r.preset = static_cast<InputPreset>(pick(rng, 0, 2));
    s.inputs = r;
  }
  TraceFilter& f = s.trace.filter;
  s.trace.enabled = pick(rng, 0, 4) != 0;
  std::tie(f.batch_begin, f.batch_end) = random_range(rng, s.config.batch);
  std::tie(f.head_begin, f.head_end) = random_range(rng, s.config.heads);
  std::tie(f.query_begin, f.query_end) = random_range(rng, s.config.seq_q);
  // The last query row is kept: its diagonal is the last key, which it sees under every mask, so
  // that the stages traced have an event of it (a filter whose rows see no key keeps none, and
  // check_capture refuses that request: Capture.FiltersThatKeepNoEventOfTheRunAreRefusedBeforeRunning).
  if (f.query_end != kOpenRangeEnd && f.query_end < s.config.seq_q) f.query_end = kOpenRangeEnd;
  const uint64_t all = all_stages_mask(kernel_stage_table(s.config.kernel));
  f.stage_mask = 0;
  while ((f.stage_mask & all) == 0) f.stage_mask = rng();
  s.trace.capacity_events = pick(rng, 0, 1) ? pick(rng, 0, 1 << 20) : pick(rng, 0, std::numeric_limits<int64_t>::max());
  s.cpu_workers = static_cast<int>(pick(rng, 0, kMaxCpuWorkers));
  if (s.backend != Backend::gpu && pick(rng, 0, 1)) s.perturb_seed = rng();
  return s;
}

// The one problem a request has (a failure when it has none or several).
std::optional<CaptureField> the_problem(const CaptureSpec& s) {
  const std::vector<CaptureProblem> problems = capture_problems(s);
  EXPECT_LE(problems.size(), 1u) << problems[1].message;
  if (problems.empty()) return std::nullopt;
  const std::string& m = problems[0].message;
  EXPECT_FALSE(m.empty());
  EXPECT_EQ(m.find("--"), std::string::npos) << "no command-line option in the model's words: " << m;
  return problems[0].field;
}

TEST(CaptureCheck, RandomValidRequestsPass) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  for (int trial = 0; trial < 300; ++trial) {
    const CaptureSpec s = random_valid_spec(rng, dir.path());
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + nlohmann::json(s.config).dump());
    const std::vector<CaptureProblem> problems = capture_problems(s);
    EXPECT_TRUE(problems.empty()) << problems.front().message;
    EXPECT_NO_THROW(check_capture(s));
  }
}

// Each kind of bad value, applied to random valid requests: one problem, its field.
TEST(CaptureCheck, EachBadValueIsRefusedWithItsField) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  using Change = std::function<void(CaptureSpec&)>;
  const auto config = [](std::function<void(AttentionConfig&)> change) {
    return Change([change](CaptureSpec& s) {
      const KernelKind kernel = s.config.kernel;
      change(s.config);
      // Another kernel, another stage table: trace all of its stages.
      if (s.config.kernel != kernel) s.trace.filter.stage_mask = ~uint64_t{0};
    });
  };
  const auto fa2 = [](AttentionConfig& c) {
    c.kernel = KernelKind::fa2, c.fault = Fault::none, c.num_splits = 0, c.head_dim = 64, c.dtype = DType::f16;
  };
  const std::vector<std::pair<CaptureField, Change>> cases = {
      {CaptureField::batch, config([](AttentionConfig& c) { c.batch = 0; })},
      {CaptureField::batch, config([](AttentionConfig& c) { c.batch = 70000; })},
      {CaptureField::heads, config([](AttentionConfig& c) { c.heads = -3; })},
      {CaptureField::heads_kv, config([](AttentionConfig& c) { c.heads = 4, c.heads_kv = 3; })},
      {CaptureField::window, config([](AttentionConfig& c) { c.window_left = -2; })},
      {CaptureField::window, config([](AttentionConfig& c) { c.window_right = (int64_t{1} << 30) + 1; })},
      {CaptureField::softcap, config([](AttentionConfig& c) { c.softcap = -1; })},
      {CaptureField::seq_q, config([](AttentionConfig& c) { c.seq_q = 0; })},
      {CaptureField::seq_kv, config([](AttentionConfig& c) { c.seq_kv = 0; })},
      {CaptureField::head_dim, config([](AttentionConfig& c) { c.head_dim = 48; })},
      {CaptureField::splits, config([](AttentionConfig& c) { c.kernel = KernelKind::splitk, c.fault = Fault::none, c.num_splits = -1; })},
      {CaptureField::splits, config([](AttentionConfig& c) { c.kernel = KernelKind::fa1, c.fault = Fault::none, c.num_splits = 4; })},
      {CaptureField::fault, config([](AttentionConfig& c) { c.kernel = KernelKind::fa1, c.num_splits = 0, c.fault = Fault::double_count_l; })},
      {CaptureField::dtype, config([&](AttentionConfig& c) { fa2(c), c.dtype = DType::f32; })},
      {CaptureField::head_dim, config([&](AttentionConfig& c) { fa2(c), c.head_dim = 32; })},
      {CaptureField::softmax_scale, config([](AttentionConfig& c) { c.softmax_scale = std::nan(""); })},
      {CaptureField::softmax_scale, config([](AttentionConfig& c) { c.softmax_scale = -0.5; })},
      {CaptureField::q_size, config([](AttentionConfig& c) { c.batch = 60000, c.heads = 60000, c.heads_kv = 0, c.seq_q = 1000; })},
      {CaptureField::kv_size,
       config([](AttentionConfig& c) { c.batch = 1, c.heads = 1, c.heads_kv = 0, c.seq_q = 1, c.seq_kv = int64_t{1} << 30; })},
      {CaptureField::input_scale, [](CaptureSpec& s) { s.inputs = RandomInputSpec{.scale = 0}; }},
      {CaptureField::input_scale, [](CaptureSpec& s) { s.inputs = RandomInputSpec{.scale = -std::numeric_limits<double>::infinity()}; }},
      {CaptureField::input_files, [](CaptureSpec& s) { s.inputs = InputFiles{}; }},
      {CaptureField::input_files, [&](CaptureSpec& s) { s.inputs = InputFiles{{dir.path() / "input0.npy", dir.path() / "input0.npy"}}; }},
      {CaptureField::input_files, [&](CaptureSpec& s) { s.inputs = InputFiles{{dir.path() / "input0.npy", dir.path() / "absent.npy", dir.path() / "input0.npy"}}; }},
      {CaptureField::input_files, [&](CaptureSpec& s) { s.inputs = InputFiles{{dir.path()}}; }},
      {CaptureField::trace_batch, [](CaptureSpec& s) { s.trace.filter.batch_begin = s.trace.filter.batch_end = 0; }},
      {CaptureField::trace_batch, [](CaptureSpec& s) { s.trace.filter.batch_begin = static_cast<int32_t>(s.config.batch), s.trace.filter.batch_end = kOpenRangeEnd; }},
      {CaptureField::trace_heads, [](CaptureSpec& s) { s.trace.filter.head_begin = -1; }},
      {CaptureField::trace_heads, [](CaptureSpec& s) { s.trace.filter.head_begin = static_cast<int32_t>(s.config.heads) + 5, s.trace.filter.head_end = kOpenRangeEnd; }},
      {CaptureField::trace_queries, [](CaptureSpec& s) { s.trace.filter.query_begin = 3, s.trace.filter.query_end = 2; }},
      {CaptureField::trace_queries, [](CaptureSpec& s) { s.trace.filter.query_begin = static_cast<int32_t>(s.config.seq_q), s.trace.filter.query_end = kOpenRangeEnd; }},
      {CaptureField::trace_stages, [](CaptureSpec& s) { s.trace.enabled = true, s.trace.filter.stage_mask = 0; }},
      {CaptureField::trace_stages, [](CaptureSpec& s) { s.trace.enabled = true, s.trace.filter.stage_mask = uint64_t{1} << 40; }},
      {CaptureField::capacity, [](CaptureSpec& s) { s.trace.capacity_events = -1; }},
      {CaptureField::capacity, [](CaptureSpec& s) { s.trace.capacity_events = std::numeric_limits<int64_t>::min(); }},
      {CaptureField::cpu_workers, [](CaptureSpec& s) { s.cpu_workers = -1; }},
      {CaptureField::cpu_workers, [](CaptureSpec& s) { s.cpu_workers = kMaxCpuWorkers + 1; }},
      {CaptureField::perturb_seed, [](CaptureSpec& s) { s.backend = Backend::gpu, s.perturb_seed = 7; }},
  };
  for (int trial = 0; trial < 10; ++trial) {
    for (size_t i = 0; i < cases.size(); ++i) {
      CaptureSpec s = random_valid_spec(rng, dir.path());
      // input0.npy exists from here on (random_valid_spec may have made it already).
      std::ofstream(dir.path() / "input0.npy") << "x";
      const auto& [field, change] = cases[i];
      change(s);
      SCOPED_TRACE("trial " + std::to_string(trial) + ", case " + std::to_string(i) + ": " + nlohmann::json(s.config).dump());
      EXPECT_EQ(the_problem(s), std::optional(field));
      try {
        check_capture(s);
        ADD_FAILURE() << "accepted";
      } catch (const ConfigError& e) {
        EXPECT_EQ(capture_field_of_config(e.field()), std::optional(field)) << e.what();
      } catch (const CaptureError& e) {
        EXPECT_EQ(e.field(), std::optional(field)) << e.what();
      }
    }
  }
  // Stages that trace nothing are fine when nothing is traced.
  CaptureSpec off = random_valid_spec(rng, dir.path());
  off.trace.enabled = false;
  off.trace.filter.stage_mask = 0;
  EXPECT_EQ(the_problem(off), std::nullopt);
}

TEST(CaptureCheck, EveryProblemIsReportedInFieldOrder) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  CaptureSpec s = random_valid_spec(rng, dir.path());
  s.backend = Backend::gpu;
  s.perturb_seed = 1;
  s.cpu_workers = -4;
  s.trace.capacity_events = -1;
  s.trace.filter.batch_begin = static_cast<int32_t>(s.config.batch);
  s.trace.filter.batch_end = kOpenRangeEnd;
  s.inputs = RandomInputSpec{.scale = std::nan("")};
  std::vector<CaptureField> fields;
  for (const CaptureProblem& p : capture_problems(s)) fields.push_back(p.field);
  EXPECT_EQ(fields, (std::vector{CaptureField::input_scale, CaptureField::trace_batch, CaptureField::capacity,
                                 CaptureField::cpu_workers, CaptureField::perturb_seed}));
  // An invalid config is one problem, and the ranges are not held against its sizes (a range
  // open to the end, not one that is empty in itself: the random spec's end may be below 5).
  s.config.seq_q = 0;
  s.trace.filter.query_begin = 5;
  s.trace.filter.query_end = kOpenRangeEnd;
  fields.clear();
  for (const CaptureProblem& p : capture_problems(s)) fields.push_back(p.field);
  EXPECT_EQ(fields, (std::vector{CaptureField::seq_q, CaptureField::input_scale, CaptureField::capacity,
                                 CaptureField::cpu_workers, CaptureField::perturb_seed}));
  EXPECT_THROW(check_capture(s), ConfigError);
}

TEST(CaptureCheck, IndexRangesAsTyped) {
  using Range = std::pair<int32_t, int32_t>;
  const CaptureField f = CaptureField::trace_heads;
  EXPECT_EQ(parse_index_range("", f), Range(0, kOpenRangeEnd));
  EXPECT_EQ(parse_index_range(" 2:5 ", f), Range(2, 5));
  EXPECT_EQ(parse_index_range("3:", f), Range(3, kOpenRangeEnd));
  EXPECT_EQ(parse_index_range(":4", f), Range(0, 4));
  EXPECT_EQ(parse_index_range("7", f), Range(7, 8));
  EXPECT_EQ(parse_index_range("2147483645", f), Range(2147483645, 2147483646));
  EXPECT_EQ(parse_index_range("0:2147483647", f), Range(0, kOpenRangeEnd));
  for (const char* bad : {"a", "1:a", "5:5", "5:2", "-1:3", "-2", "1:2:3", "9223372036854775807", "2147483646",
                          "0:2147483648", "2147483647:", "0x10"}) {
    SCOPED_TRACE(bad);
    for (CaptureField field : {CaptureField::trace_batch, CaptureField::trace_heads, CaptureField::trace_queries}) {
      try {
        parse_index_range(bad, field);
        ADD_FAILURE() << "accepted";
      } catch (const CaptureError& e) {
        EXPECT_EQ(e.field(), std::optional(field));
        EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
      }
    }
  }
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 1000; ++i) {
    const Range r = random_range(rng, pick(rng, 1, int64_t{1} << 30));
    EXPECT_EQ(parse_index_range(index_range_text(r.first, r.second), f), r) << index_range_text(r.first, r.second);
  }
}

TEST(CaptureCheck, ConfigFieldNames) {
  EXPECT_EQ(capture_field_of_config("num_splits"), CaptureField::splits);
  EXPECT_EQ(capture_field_of_config("window_left"), CaptureField::window);
  EXPECT_EQ(capture_field_of_config("q"), CaptureField::q_size);
  EXPECT_EQ(capture_field_of_config("alibi_slopes"), std::nullopt) << "not a field of a capture";
}

}  // namespace
}  // namespace ts
