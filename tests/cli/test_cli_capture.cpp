// `tilescope capture` and `tilescope info` through the real binary: every config field and
// metadata key survives the round trip, filters keep exactly what they ask, a small capacity
// drops an exact count, and the trace's events and output equal an in-process launch's.
#include <gtest/gtest.h>

#include "kernels/kernel_stages.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "app/model/capture/capture_metadata.h"
#include "app/model/capture/run_capture.h"
#include "app/model/capture/tool_version.h"
#include "app/model/trace_session.h"
#include "base/random_inputs.h"
#include "tests/cli/cli_runner.h"
#include "tests/model/capture_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::CliRun;
using test::run_tilescope;

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

LaunchRequest cpu_request(const AttentionConfig& c, bool tracing = true) {
  LaunchRequest r;
  r.config = c;
  r.backend = Backend::cpu;
  r.cpu_workers = 2;
  r.trace.enabled = tracing;
  return r;
}

TEST(CliCapture, InfoRoundTripsEveryConfigFieldAndMetadataKey) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  for (int round = 0; round < 3; ++round) {
    const AttentionConfig c = test::random_small_config(rng, /*with_fault=*/true);
    const uint64_t input_seed = rng();
    const auto dist = rng() % 2 ? InputDistribution::uniform : InputDistribution::normal;
    const auto preset = static_cast<InputPreset>(rng() % 3);
    const double input_scale = std::uniform_real_distribution<double>(0.25, 2.0)(rng);
    const int64_t capacity = 100000 + static_cast<int64_t>(rng() % 1000);
    const auto file = dir.path() / ("run" + std::to_string(round) + ".trace.safetensors");
    SCOPED_TRACE(nlohmann::json(c).dump());

    const CliRun cap = run_tilescope(
        concat(test::capture_args(c),
               {"--backend", "cpu", "--workers", "2", "--seed", std::to_string(input_seed),
                "--distribution", std::string(to_string(dist)), "--input-scale",
                exact_decimal(input_scale), "--preset", std::string(to_string(preset)),
                "--capacity", std::to_string(capacity), "-o", file.string()}),
        dir.path());
    ASSERT_EQ(cap.exit_code, 0) << cap.err;
    EXPECT_NE(cap.out.find("Captured"), std::string::npos) << cap.out;
    EXPECT_NE(cap.out.find("0 dropped"), std::string::npos) << cap.out;

    const CliRun info = run_tilescope({"info", file.string(), "--json"}, dir.path());
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const nlohmann::json j = nlohmann::json::parse(info.out);

    // The config as run: every field as asked, num_splits resolved when the heuristic chose.
    AttentionConfig back = j.at("config").get<AttentionConfig>();
    AttentionConfig expected = c;
    if (c.kernel == KernelKind::fa1) expected.num_splits = 1;
    if (c.kernel == KernelKind::splitk && c.num_splits == 0) {
      EXPECT_GE(back.num_splits, 1);
      expected.num_splits = back.num_splits;
    }
    EXPECT_EQ(back, expected);
    EXPECT_EQ(j.at("tiling").get<Tiling>(), make_tiling(expected, kCpuNominalSmCount));

    const nlohmann::json& m = j.at("metadata");
    EXPECT_EQ(m.at("kernel"), to_string(c.kernel));
    EXPECT_EQ(m.at("fault"), to_string(c.fault));
    EXPECT_EQ(m.at("backend"), "cpu");
    EXPECT_NE(m.at("device").get<std::string>().find("CPU"), std::string::npos);
    EXPECT_EQ(m.at("inputs_seed"), std::to_string(input_seed));
    EXPECT_EQ(m.at("inputs_distribution"), to_string(dist));
    EXPECT_EQ(std::stod(m.at("inputs_scale").get<std::string>()), input_scale);
    EXPECT_EQ(m.at("inputs_preset"), to_string(preset));
    EXPECT_EQ(m.at("trace_capacity"), std::to_string(capacity));
    EXPECT_EQ(m.at("cpu_workers"), "2");
    EXPECT_EQ(m.at("tool_version"), tool_version());
    EXPECT_GE(std::stod(m.at("elapsed_ms").get<std::string>()), 0.0);
    EXPECT_EQ(m.at("captured_at").get<std::string>().size(), 20u);
    EXPECT_EQ(m.at("tilescope_format"), "2");
    EXPECT_EQ(m.at("dropped_events"), "0");
    const std::vector<StageInfo> table = kernel_stage_table(c.kernel);
    const TraceRequest filter =
        trace_request_from_json(nlohmann::json::parse(m.at("trace_filter").get<std::string>()), table);
    EXPECT_TRUE(filter.enabled);
    EXPECT_EQ(filter.filter.batch_begin, 0);
    EXPECT_EQ(filter.filter.batch_end, TraceFilter{}.batch_end);
    EXPECT_EQ(filter.filter.stage_mask, all_stages_mask(table));
    EXPECT_FALSE(m.contains("inputs_files"));

    // Events by stage as an in-process launch of the same config records them.
    const AttentionInputs in = make_random_inputs(
        c, {.seed = input_seed, .distribution = dist, .scale = input_scale, .preset = preset});
    const RunView mine = test::launch_view(cpu_request(c), in);
    std::vector<size_t> per_stage(table.size(), 0), never_written(table.size(), 0);
    for (size_t i = 0; i < mine.recorded_events; ++i) ++per_stage[static_cast<size_t>(mine.headers[i].stage)];
    // A fault may leave planned events unwritten (empty_split's split): as many as in-process.
    for (const EventHeader& m : mine.missing) ++never_written[static_cast<size_t>(m.stage)];
    ASSERT_EQ(j.at("stages").size(), table.size());
    for (size_t s = 0; s < table.size(); ++s) {
      EXPECT_EQ(j.at("stages")[s].at("name"), table[s].name);
      EXPECT_EQ(j.at("stages")[s].at("events"), per_stage[s]) << table[s].name;
      EXPECT_EQ(j.at("stages")[s].at("never_written"), never_written[s]) << table[s].name;
    }
    EXPECT_EQ(j.at("events").at("recorded"), mine.recorded_events);
    EXPECT_EQ(j.at("events").at("dropped"), 0);
    EXPECT_EQ(j.at("inputs").at("query_heads").size(), static_cast<size_t>(c.batch * c.heads));
    EXPECT_EQ(j.at("attention").at("heads_q"), c.heads);
    EXPECT_EQ(j.at("inputs").at("dtype"), to_string(c.dtype));
    EXPECT_EQ(j.at("output").at("shape"), (std::vector<int64_t>{c.batch, c.heads, c.seq_q, c.head_dim}));
    EXPECT_EQ(j.at("file_size"), std::filesystem::file_size(file));

    // The text form says the same things a person looks for.
    const CliRun text = run_tilescope({"info", file.string()}, dir.path());
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find(std::string(to_string(c.kernel)) + "/" + std::string(to_string(c.fault))),
              std::string::npos) << text.out;
    if (mine.missing.empty())
      EXPECT_NE(text.out.find(" recorded)"), std::string::npos) << "nothing dropped or never written: " << text.out;
    else
      EXPECT_NE(text.out.find(" never written by the kernel)"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("seed " + std::to_string(input_seed)), std::string::npos) << text.out;
  }
}

TEST(CliCapture, FilteredCaptureKeepsExactlyTheFilteredEventsAndPairs) {
  TS_SEEDED(seed);
  test::TempDir dir;
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    AttentionConfig c;
    c.kernel = k;
    c.batch = 2;
    c.heads = 3;
    c.seq_q = 150;
    c.seq_kv = 130;
    c.head_dim = 32;
    c.dtype = DType::f16;
    c.causal = true;
    c.num_splits = k == KernelKind::splitk ? 3 : 0;
    const std::string stage = k == KernelKind::fa1 ? "fa1.step" : "splitk.partial";
    const std::vector<StageInfo> table = kernel_stage_table(k);
    const auto full = dir.path() / "full.trace.safetensors";
    const auto part = dir.path() / "part.trace.safetensors";
    const auto common = concat(test::capture_args(c), {"--backend", "cpu", "--workers", "2",
                                                          "--seed", std::to_string(seed)});
    ASSERT_EQ(run_tilescope(concat(common, {"-o", full.string()}), dir.path()).exit_code, 0);
    const CliRun r = run_tilescope(
        concat(common, {"--trace-batch", "1:2", "--trace-head", "1:", "--trace-queries", "70:100",
                        "--stages", stage + ",final", "-o", part.string()}),
        dir.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;

    const RunView a = open_run(full), b = open_run(part);
    TraceFilter f;
    f.batch_begin = 1;
    f.batch_end = 2;
    f.head_begin = 1;
    f.query_begin = 70;
    f.query_end = 100;
    f.stage_mask = stage_mask_from_names(stage + ",final", table);
    std::vector<size_t> kept;
    for (size_t i = 0; i < a.recorded_events; ++i) {
      const EventHeader& h = a.headers[i];
      if (filter_keeps(f, h.stage, h.batch, h.head, h.q_begin, h.rows)) kept.push_back(i);
    }
    ASSERT_FALSE(kept.empty());
    ASSERT_LT(kept.size(), a.recorded_events);
    ASSERT_EQ(b.recorded_events, kept.size());
    for (size_t j = 0; j < kept.size(); ++j)
      ASSERT_EQ(test::event_difference(a, kept[j], b, j), "") << "filtered event " << j;

    // Only the traced pairs' inputs, equal to those pairs of the full inputs.
    const std::vector<std::array<int32_t, 2>> pairs{{1, 1}, {1, 2}};
    EXPECT_EQ(b.inputs.q_pairs, pairs);
    EXPECT_EQ(b.inputs.kv_pairs, pairs);
    const AttentionInputs in = make_random_inputs(c, {.seed = seed});
    ASSERT_EQ(b.inputs.q.shape, (std::vector<int64_t>{2, c.seq_q, c.head_dim}));
    ASSERT_EQ(b.inputs.k.shape, (std::vector<int64_t>{2, c.seq_kv, c.head_dim}));
    for (size_t p = 0; p < pairs.size(); ++p) {
      const int64_t bh = pairs[p][0] * c.heads + pairs[p][1];
      const int64_t nq = c.seq_q * c.head_dim, nkv = c.seq_kv * c.head_dim;
      const int64_t ip = static_cast<int64_t>(p);
      for (int64_t i = 0; i < nq; ++i)
        ASSERT_EQ(b.inputs.q.get_float(ip * nq + i), in.q.get_float(bh * nq + i)) << p << " q " << i;
      for (int64_t i = 0; i < nkv; ++i) {
        ASSERT_EQ(b.inputs.k.get_float(ip * nkv + i), in.k.get_float(bh * nkv + i)) << p << " k " << i;
        ASSERT_EQ(b.inputs.v.get_float(ip * nkv + i), in.v.get_float(bh * nkv + i)) << p << " v " << i;
      }
    }
    EXPECT_EQ(b.inputs.q_index(0, 1), -1);
    EXPECT_EQ(b.inputs.q_index(1, 2), 1);
    EXPECT_EQ(a.inputs.q_pairs.size(), 6u);
  }
}

TEST(CliCapture, SmallCapacityDropsAnExactCountAndKeepsTheFirstEvents) {
  TS_SEEDED(seed);
  test::TempDir dir;
  AttentionConfig c;
  c.kernel = KernelKind::splitk;
  c.heads = 2;
  c.seq_q = 70;
  c.seq_kv = 300;
  c.head_dim = 32;
  c.num_splits = 3;
  const AttentionInputs in = make_random_inputs(c, {.seed = seed});
  const RunView full = test::launch_view(cpu_request(c), in);
  const size_t n = full.recorded_events;
  const size_t capacity = n / 3 + seed % (n / 3);
  const auto file = dir.path() / "small.trace.safetensors";
  const CliRun r = run_tilescope(
      concat(test::capture_args(c), {"--backend", "cpu", "--seed", std::to_string(seed),
                                       "--capacity", std::to_string(capacity), "-o", file.string()}),
      dir.path());
  EXPECT_EQ(r.exit_code, 2) << "an incomplete capture is not a success: " << r.err;
  EXPECT_NE(r.err.find("trace buffer was full"), std::string::npos) << r.err;
  ASSERT_TRUE(std::filesystem::exists(file)) << "the partial trace is kept";
  EXPECT_NE(r.out.find(std::to_string(n - capacity) + " dropped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a larger --capacity"), std::string::npos) << r.out;

  const CliRun info = run_tilescope({"info", "--json", file.string()}, dir.path());
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const nlohmann::json j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j.at("events").at("dropped"), n - capacity);
  EXPECT_EQ(j.at("events").at("recorded"), capacity);
  EXPECT_EQ(j.at("events").at("requested"), n);

  const RunView part = open_run(file);
  ASSERT_EQ(part.recorded_events, capacity);
  EXPECT_EQ(part.dropped_events, n - capacity);
  for (size_t i = 0; i < capacity; ++i)
    ASSERT_EQ(test::event_difference(full, i, part, i), "") << i;
}

TEST(CliCapture, TraceEqualsAnInProcessLaunchAndFinalEventsEqualTheOutput) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  for (int round = 0; round < 3; ++round) {
    AttentionConfig c = test::random_small_config(rng, /*with_fault=*/false);
    SCOPED_TRACE(nlohmann::json(c).dump());
    const uint64_t input_seed = rng();
    const auto file = dir.path() / "run.trace.safetensors";
    const CliRun r = run_tilescope(
        concat(test::capture_args(c), {"--backend", "cpu", "--seed", std::to_string(input_seed),
                                         "-o", file.string()}),
        dir.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const RunView trace = open_run(file);

    LaunchRequest req = cpu_request(c);
    LaunchOutcome launched = launch_attention(req, make_random_inputs(c, {.seed = input_seed}));
    ASSERT_TRUE(trace.output.has_value());
    EXPECT_TRUE(test::same_bytes(*trace.output, launched.o));
    auto events = std::make_shared<CapturedEvents>(std::move(launched.events));
    const RunView mine = run_view_from_capture(events, launched, {}, {});
    EXPECT_EQ(test::run_events_difference(mine, trace), "");

    // Every final event holds the output rows as written, and LSE in the m channel.
    const AttentionConfig& rc = *trace.config;
    const int32_t final_stage = trace.stage_index("final");
    size_t finals = 0;
    for (size_t i = 0; i < trace.num_events(); ++i) {
      const RunEvent e = trace.event(i);
      if (e.header.stage != final_stage) continue;
      ++finals;
      for (int32_t r = 0; r < e.header.rows; ++r) {
        const int64_t q = int64_t{e.header.q_begin} + r;
        const int64_t row = (int64_t{e.header.batch} * rc.heads + e.header.head) * rc.seq_q + q;
        for (int64_t d = 0; d < rc.head_dim; ++d) {
          const float want = trace.output->get_float(row * rc.head_dim + d);
          const float got = e.o[static_cast<size_t>(r * rc.head_dim + d)];
          ASSERT_EQ(std::memcmp(&want, &got, sizeof(float)), 0) << "row " << row << " col " << d;
        }
        const float lse = launched.lse[static_cast<size_t>(row)];
        ASSERT_EQ(std::memcmp(&lse, &e.m[static_cast<size_t>(r)], sizeof(float)), 0) << "lse row " << row;
      }
    }
    EXPECT_EQ(finals, static_cast<size_t>(rc.batch * rc.heads * trace.tiling->num_q_tiles));
  }
}

TEST(CliCapture, NoTraceWritesInputsAndOutputOnly) {
  TS_SEEDED(seed);
  test::TempDir dir;
  AttentionConfig c;
  c.seq_q = 40;
  c.seq_kv = 90;
  c.head_dim = 32;
  const auto file = dir.path() / "plain.trace.safetensors";
  const CliRun r = run_tilescope(concat(test::capture_args(c), {"--backend", "cpu", "--no-trace", "--seed",
                                                                  std::to_string(seed), "-o", file.string()}),
                                 dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunView run = open_run(file);
  EXPECT_EQ(run.recorded_events, 0u);
  ASSERT_TRUE(run.output.has_value());
  LaunchOutcome launched = launch_attention(cpu_request(c, false), make_random_inputs(c, {.seed = seed}));
  EXPECT_TRUE(test::same_bytes(*run.output, launched.o));
  EXPECT_EQ(run.inputs.q_pairs.size(), 1u);
  EXPECT_FALSE(
      trace_request_from_json(nlohmann::json::parse(run.metadata.at("trace_filter")), kernel_stage_table(c.kernel))
          .enabled);
  // The output is still compared: its events are the run's.
  EXPECT_GT(run.num_events(), 0u);
}

}  // namespace
}  // namespace ts
