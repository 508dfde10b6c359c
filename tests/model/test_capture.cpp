// The capture pipeline in process: run_capture's view and metadata, the inputs it keeps,
// progress and cancel, request checks, and the trace filter's JSON form.
#include <gtest/gtest.h>

#include "kernels/kernel_stages.h"
#include "kernels/launch_plan.h"  // kTileEventsByDefaultLimit

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>
#include <nlohmann/json.hpp>

#include "app/model/capture/capture_check.h"
#include "app/model/capture/capture_error.h"
#include "app/model/capture/capture_inputs.h"
#include "app/model/capture/capture_metadata.h"
#include "app/model/capture/run_capture.h"
#include "app/model/capture/tool_version.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/tensor_files.h"
#include "tests/model/capture_test_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

CaptureSpec small_spec(std::mt19937_64& rng, bool with_fault) {
  CaptureSpec spec;
  spec.config = test::random_small_config(rng, with_fault);
  spec.backend = Backend::cpu;
  spec.cpu_workers = 2;
  spec.inputs = RandomInputSpec{.seed = rng()};
  return spec;
}

TEST(Capture, ViewAndMetadataDescribeTheLaunch) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 4; ++round) {
    CaptureSpec spec = small_spec(rng, /*with_fault=*/true);
    SCOPED_TRACE(nlohmann::json(spec.config).dump());
    // Half the rounds trace a random sub-range of batch and heads.
    if (round % 2 == 1) {
      spec.trace.filter.batch_begin = static_cast<int32_t>(rng() % static_cast<uint64_t>(spec.config.batch));
      spec.trace.filter.head_begin = static_cast<int32_t>(rng() % static_cast<uint64_t>(spec.config.heads));
      spec.trace.filter.head_end = spec.trace.filter.head_begin + 1;
    }
    const CaptureResult r = run_capture(spec);
    const RunView& v = r.view;
    EXPECT_EQ(v.label, "capture");
    EXPECT_EQ(v.config, r.outcome.config);
    EXPECT_EQ(v.tiling, r.outcome.tiling);
    // Payloads are compact: as many rows as the largest event holds, at most a query tile's.
    int32_t most_rows = 0;
    for (size_t i = 0; i < v.recorded_events; ++i) most_rows = std::max(most_rows, v.headers[i].rows);
    for (const EventHeader& h : v.missing) most_rows = std::max(most_rows, h.rows);
    if (v.recorded_events > 0 || !v.missing.empty()) {
      EXPECT_EQ(v.max_rows, most_rows);
    }
    EXPECT_LE(v.max_rows, v.tiling->block_m);
    EXPECT_EQ(v.head_dim, spec.config.head_dim);
    EXPECT_TRUE(r.outcome.events.headers.empty());  // moved into r.events
    ASSERT_EQ(v.recorded_events, r.events->size());  // then the output's events
    EXPECT_EQ(v.m.data(), r.events->m.data());  // views, not copies
    EXPECT_EQ(v.o.size(), r.events->o.size());
    for (size_t i = 0; i < v.recorded_events; ++i) {
      const EventHeader& h = v.headers[i];
      EXPECT_TRUE(filter_keeps(spec.trace.filter, h.stage, h.batch, h.head, h.q_begin, h.rows));
    }
    ASSERT_TRUE(v.output.has_value());
    EXPECT_TRUE(test::same_bytes(*v.output, r.outcome.o));

    // The inputs kept: exactly the filter's pairs, equal to those pairs' slices.
    const AttentionInputs full = make_random_inputs(spec.config, std::get<RandomInputSpec>(spec.inputs));
    const auto pairs = traced_pairs(spec.config, spec.trace.filter);
    EXPECT_EQ(v.inputs.q_pairs, pairs);
    // K and V once per kv head the traced query heads read (GQA: query head h reads h / group).
    std::vector<std::array<int32_t, 2>> kv_pairs;
    const int64_t group = spec.config.heads / spec.config.kv_heads();
    for (const auto& [b, h] : pairs) {
      const std::array<int32_t, 2> kv{b, static_cast<int32_t>(h / group)};
      if (std::find(kv_pairs.begin(), kv_pairs.end(), kv) == kv_pairs.end()) kv_pairs.push_back(kv);
    }
    EXPECT_EQ(v.inputs.kv_pairs, kv_pairs);
    EXPECT_EQ(v.inputs.k.shape, (std::vector<int64_t>{static_cast<int64_t>(kv_pairs.size()), spec.config.seq_kv,
                                                      spec.config.head_dim}));
    for (size_t p = 0; p < kv_pairs.size(); ++p) {
      const int64_t bh = kv_pairs[p][0] * spec.config.kv_heads() + kv_pairs[p][1];
      const int64_t n = spec.config.seq_kv * spec.config.head_dim;
      for (int64_t i = 0; i < n; i += 7) {
        ASSERT_EQ(v.inputs.k.get_float(static_cast<int64_t>(p) * n + i), full.k.get_float(bh * n + i));
        ASSERT_EQ(v.inputs.v.get_float(static_cast<int64_t>(p) * n + i), full.v.get_float(bh * n + i));
      }
    }

    const auto& m = v.metadata;
    EXPECT_EQ(m.at("config"), nlohmann::json(r.outcome.config).dump());
    EXPECT_EQ(m.at("tiling"), nlohmann::json(r.outcome.tiling).dump());
    EXPECT_EQ(m.at("kernel"), to_string(spec.config.kernel));
    EXPECT_EQ(m.at("fault"), to_string(spec.config.fault));
    EXPECT_EQ(m.at("backend"), "cpu");
    EXPECT_EQ(m.at("device"), r.outcome.device);
    EXPECT_EQ(m.at("inputs_seed"), std::to_string(std::get<RandomInputSpec>(spec.inputs).seed));
    EXPECT_EQ(m.at("tool_version"), tool_version());
    EXPECT_EQ(m.at("cpu_workers"), "2");
    EXPECT_FALSE(m.contains("perturb_seed"));
    const TraceRequest back =
        trace_request_from_json(nlohmann::json::parse(m.at("trace_filter")), kernel_stage_table(spec.config.kernel));
    EXPECT_EQ(back.filter.batch_begin, spec.trace.filter.batch_begin);
    EXPECT_EQ(back.filter.head_end, spec.trace.filter.head_end);
    EXPECT_EQ(std::stoll(m.at("trace_capacity")), spec.trace.capacity_events);
    for (const auto& [key, value] : m) EXPECT_FALSE(value.empty()) << key;
  }
}

TEST(Capture, ProgressReachesTheTotalAndCancelStopsTheRun) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  CaptureSpec spec = small_spec(rng, false);
  // Each phase counts its own work from 0 to its total, in the phases' order; the random inputs
  // are generated, then the kernels run, then (the trace records them as their recipe) hashed.
  std::mutex mutex;
  std::vector<CapturePhase> phases;
  std::map<CapturePhase, std::pair<uint64_t, uint64_t>> last;  // done, total
  bool monotonic = true;
  run_capture(
      spec,
      [&](uint64_t done, uint64_t total) {
        std::lock_guard lock(mutex);
        auto& [last_done, last_total] = last[phases.back()];
        monotonic &= done >= last_done && done <= total && (last_total == 0 || total == last_total);
        last_done = done;
        last_total = total;
      },
      nullptr, [&](CapturePhase p) { phases.push_back(p); });
  EXPECT_EQ(phases, (std::vector<CapturePhase>{CapturePhase::inputs, CapturePhase::kernels, CapturePhase::hashing}));
  EXPECT_TRUE(monotonic);
  for (CapturePhase p : phases) {
    EXPECT_GT(last[p].second, 0u) << to_string(p);
    EXPECT_EQ(last[p].first, last[p].second) << to_string(p);
  }

  const std::atomic<bool> cancel{true};
  try {
    run_capture(spec, {}, &cancel);
    FAIL() << "a cancelled capture returned";
  } catch (const LaunchError& e) {
    EXPECT_TRUE(e.cancelled());
  }
}

TEST(Capture, PerturbSeedAndWorkersAreRecorded) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  CaptureSpec spec = small_spec(rng, false);
  spec.cpu_workers = 1;
  spec.perturb_seed = rng();
  const CaptureResult r = run_capture(spec);
  EXPECT_EQ(r.view.metadata.at("perturb_seed"), std::to_string(*spec.perturb_seed));
  EXPECT_EQ(r.view.metadata.at("cpu_workers"), "1");
}

TEST(Capture, RequestsThatCannotRunAreRefusedBeforeRunning) {
  CaptureSpec spec;
  spec.config.batch = 2;
  spec.config.heads = 2;
  spec.config.seq_q = 100;  // 2 query tiles of 64
  spec.backend = Backend::cpu;
  auto refused = [](const CaptureSpec& s, const std::string& message) {
    try {
      run_capture(s);
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const CaptureError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  CaptureSpec s = spec;
  s.trace.filter.batch_begin = 2;
  refused(s, "keeps nothing");
  s = spec;
  s.trace.filter.head_begin = 1;
  s.trace.filter.head_end = 1;
  refused(s, "empty");
  s = spec;
  s.trace.filter.query_begin = static_cast<int32_t>(spec.config.seq_q);
  refused(s, "queries");
  s = spec;
  s.trace.filter.stage_mask = uint64_t{1} << 5;  // past FA-1's two stages
  refused(s, "no stage is traced");
  s = spec;
  s.trace.capacity_events = -5;
  refused(s, "capacity");
  s = spec;
  s.cpu_workers = -1;
  refused(s, "CPU workers");
  s = spec;
  s.backend = Backend::gpu;
  s.perturb_seed = 1;
  refused(s, "perturbation seed");
  s = spec;
  s.inputs = InputFiles{{"a.npy", "b.npy"}};
  refused(s, "got 2 files");
  s = spec;
  s.config.head_dim = 65;
  EXPECT_THROW(run_capture(s), ConfigError);
}

// Filters each in range can keep no event of the run: a stage the traced query rows do not have
// (rows that see no key have no steps), or Split-K's tile stage with its events off (asked, or by
// the run's size). The capture is refused before it runs, naming why, where it wrote a trace of
// no event and exited 0; the same filters with a row that sees a key, or tile events the filters
// keep few enough of, are taken.
TEST(Capture, FiltersThatKeepNoEventOfTheRunAreRefusedBeforeRunning) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  auto refused = [](const CaptureSpec& s, const std::string& message) {
    try {
      check_capture(s);
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const CaptureError& e) {
      EXPECT_EQ(e.field(), CaptureField::trace_stages) << e.what();
      EXPECT_NE(std::string(e.what()).find("the trace filters keep no event of this run"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  // FA-1, causal, more query rows than keys: the first seq_q - seq_kv rows see no key, the whole
  // first query tile of 64 rows among them (an event holds a tile's rows: a tile with one row
  // that sees a key has its steps).
  CaptureSpec fa1;
  fa1.config.kernel = KernelKind::fa1;
  fa1.config.seq_kv = 40 + int64_t(rng() % 100);
  const int64_t blind = 64 + int64_t(rng() % 60);
  fa1.config.seq_q = fa1.config.seq_kv + blind;
  fa1.config.causal = true;
  fa1.backend = Backend::cpu;
  fa1.cpu_workers = 2;
  fa1.inputs = RandomInputSpec{.seed = rng()};
  fa1.trace.enabled = true;
  fa1.trace.filter.stage_mask = uint64_t{1} << kFa1StepStage;
  fa1.trace.filter.query_begin = int32_t(rng() % 64);
  fa1.trace.filter.query_end = 64;
  SCOPED_TRACE("FA-1 causal, seq_q " + std::to_string(fa1.config.seq_q) + ", seq_kv " + std::to_string(fa1.config.seq_kv));
  refused(fa1, "query rows that see no key under the mask have no steps");
  fa1.trace.filter.query_end = int32_t(blind) + 1;  // the second query tile: its last rows see keys
  const CaptureResult taken = run_capture(fa1);
  EXPECT_GT(taken.view.headers.size(), 0u);

  // Split-K's tile stage alone, its events off.
  CaptureSpec tiles;
  tiles.config.kernel = KernelKind::splitk;
  tiles.config.seq_q = 1 + int64_t(rng() % 20);
  tiles.config.seq_kv = 200 + int64_t(rng() % 600);
  tiles.config.num_splits = 2;
  tiles.backend = Backend::cpu;
  tiles.trace.enabled = true;
  tiles.trace.filter.stage_mask = uint64_t{1} << kSplitkTileStage;
  tiles.tile_events = false;
  refused(tiles, "tile events are off");
  tiles.tile_events = true;
  EXPECT_NO_THROW(check_capture(tiles));
  // By the run's size: more tile states than the default allows, unless the filters keep fewer.
  tiles.tile_events.reset();
  tiles.config.heads = 2;
  tiles.config.seq_q = 2048;                                     // 256 query tiles of 8 rows
  tiles.config.seq_kv = 128 * (129 + int64_t(rng() % 100));     // over 128 kv tiles of 128 keys
  refused(tiles, "more than " + std::to_string(kTileEventsByDefaultLimit) + " tile states");
  tiles.trace.filter.head_end = 1;
  tiles.trace.filter.query_end = 8 * 128;  // 1 head x 128 query tiles
  EXPECT_NO_THROW(check_capture(tiles));
}

TEST(CaptureInputs, FileErrorsNameTheFileAndTensor) {
  TS_SEEDED(seed);
  test::TempDir dir;
  AttentionConfig c;
  c.seq_q = 10;
  c.seq_kv = 12;
  c.head_dim = 32;
  c.dtype = DType::f16;
  const AttentionInputs in = make_random_inputs(c, {.seed = seed});
  const auto q = dir.path() / "q16.npy", k = dir.path() / "k16.npy", v = dir.path() / "v16.npy";
  write_npy(q, ElemType::F16, in.q.shape, in.q.bytes.data());
  write_npy(k, ElemType::F16, in.k.shape, in.k.bytes.data());
  write_npy(v, ElemType::F16, in.v.shape, in.v.bytes.data());
  const LoadedInputs ok = load_capture_inputs(c, InputFiles{{q, k, v}});
  EXPECT_TRUE(test::same_bytes(ok.tensors.v, in.v));
  EXPECT_EQ(nlohmann::json::parse(ok.provenance.at("inputs_sha256"))[2], sha256_file(v));

  try {
    load_capture_inputs(c, InputFiles{{q, v, v}});  // v is [.., seq_kv, ..]: fine as k
    AttentionConfig c2 = c;
    c2.seq_kv = 13;
    load_capture_inputs(c2, InputFiles{{q, k, v}});
    FAIL() << "a shape mismatch was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.tensor(), "k");
    EXPECT_NE(std::string(e.what()).find("k16.npy"), std::string::npos) << e.what();
  }
  AttentionConfig c32 = c;
  c32.dtype = DType::f32;
  try {
    load_capture_inputs(c32, InputFiles{{q, k, v}});
    FAIL() << "a dtype mismatch was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("q16.npy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--dtype"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_capture_inputs(c, InputFiles{{q, dir.path() / "nope.npy", v}}), FileReadError);
}

TEST(CaptureMetadata, TraceFilterJsonRoundTrips) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 50; ++i) {
    TraceRequest r;
    r.enabled = rng() % 2 == 0;
    auto range = [&](int32_t& b, int32_t& e) {
      b = static_cast<int32_t>(rng() % 100);
      if (rng() % 2) e = b + 1 + static_cast<int32_t>(rng() % 100);
    };
    range(r.filter.batch_begin, r.filter.batch_end);
    range(r.filter.head_begin, r.filter.head_end);
    range(r.filter.query_begin, r.filter.query_end);
    const std::vector<StageInfo> table = kernel_stage_table(KernelKind::splitk);
    r.filter.stage_mask = 1u + rng() % all_stages_mask(table);
    const TraceRequest back =
        trace_request_from_json(nlohmann::json::parse(trace_filter_to_json(r, table).dump()), table);
    EXPECT_EQ(back.enabled, r.enabled);
    EXPECT_EQ(back.filter.batch_begin, r.filter.batch_begin);
    EXPECT_EQ(back.filter.batch_end, r.filter.batch_end);
    EXPECT_EQ(back.filter.head_begin, r.filter.head_begin);
    EXPECT_EQ(back.filter.head_end, r.filter.head_end);
    EXPECT_EQ(back.filter.query_begin, r.filter.query_begin);
    EXPECT_EQ(back.filter.query_end, r.filter.query_end);
    EXPECT_EQ(back.filter.stage_mask, r.filter.stage_mask);
    EXPECT_EQ(stage_mask_from_names(stage_mask_names(r.filter.stage_mask, table), table), r.filter.stage_mask);
  }
  const std::vector<StageInfo> fa1 = kernel_stage_table(KernelKind::fa1);
  EXPECT_THROW(trace_request_from_json(nlohmann::json::parse(R"({"enabled": true})"), fa1), CaptureError);
  EXPECT_THROW(trace_request_from_json(nlohmann::json::parse(
                   R"({"enabled": true, "batch": [3, 1], "head": [0, null], "queries": [0, null], "stages": []})"), fa1),
               CaptureError);
  EXPECT_THROW(trace_request_from_json(nlohmann::json::parse(
                   R"({"enabled": true, "batch": [0, 18446744073709551615], "head": [0, null], "queries": [0, null], "stages": []})"), fa1),
               CaptureError);
  EXPECT_THROW(stage_mask_from_names("final,,fa1.step", fa1), CaptureError);
  EXPECT_THROW(stage_mask_from_names("splitk.reduce", fa1), CaptureError) << "a stage of another kernel";
  EXPECT_EQ(stage_mask_from_names(" final,\tfa1.step ", fa1), all_stages_mask(fa1)) << "blanks around names";
  EXPECT_THROW(stage_mask_from_names("final, ,fa1.step", fa1), CaptureError) << "a blank name";
  for (double x : {0.125, 1e-5, 0.1, 1.0 / 3.0, 12345.678})
    EXPECT_EQ(std::stod(exact_decimal(x)), x);
}

}  // namespace
}  // namespace ts
