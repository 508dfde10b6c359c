// The viewer's session on captured runs and trace files: opening lands on the first
// divergence; --select; pairs; the selected event beside its reference; runs opened and
// captured through the worker-thread functions, their errors and cancellation; A/B pairing and
// the arrays the A/B panel draws, checked against the runs' own payloads.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>
#include <tuple>

#include "app/model/analysis/analyze_run.h"
#include "app/model/trace_session.h"
#include "app/model/viewer/viewer_session.h"
#include "instrumentation/trace/file_error.h"
#include "kernels/launch_error.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

// O/l of event i straight from the payload (normalised events: O itself).
float o_norm(const RunView& run, size_t i, int32_t r, int32_t c) {
  const RunEvent e = run.event(i);
  const float o = e.o[static_cast<size_t>(r * run.head_dim + c)];
  if (e.header.convention & kNormalized) return o;
  const float l = e.l[static_cast<size_t>(r)];
  return o == 0 && l == 0 ? 0.0f : o / l;
}

// Stepping compares each new event against a cached row block: selecting an event starts
// computing the row blocks of the next and previous events in the stepping order on the
// prefetcher's thread. The reference's cache here holds only a few row blocks, so the analysis
// leaves most of them out.
TEST(ViewerSession, TheRowBlocksSteppingReachesNextAreComputedAhead) {
  TS_SEEDED(seed);
  AttentionConfig c = test::fa1_small(Fault::per_tile_softmax);
  c.seq_q = 360;  // 6 query tiles of 64 (FA-1 with head dim 32)
  const LoadedRun captured = test::capture_cpu(c, seed);
  LoadedRun loaded = captured;
  const RunView& run = *captured.run;
  const Tiling& t = *run.tiling;
  ASSERT_EQ(t.num_q_tiles, 6);
  const auto rows_of = [&](int32_t q_tile) {
    return RowBlock{0, 0, q_tile * t.block_m, static_cast<int32_t>(std::min<int64_t>(t.block_m, c.seq_q - q_tile * t.block_m))};
  };
  // A reference that caches four row blocks of this run (a row block's size, measured on another).
  RunReferenceOptions small;
  small.cache_bytes = 4 * RunReference(run).block(rows_of(0))->bytes() + 1;
  auto reference = std::make_shared<RunReference>(run, small);
  reference->set_tolerance(captured.reference->tolerance());  // as the analysis leaves it
  loaded.reference = reference;
  for (int32_t q = 0; q < t.num_q_tiles; ++q) EXPECT_FALSE(loaded.reference->has_cached(rows_of(q)));

  ViewerSession s;
  s.open(std::move(loaded));
  // The first event of query tile 1 in the kernel's order.
  std::optional<size_t> first_of_tile1;
  for (size_t e : s.stepper().order())
    if (run.headers[e].q_begin == rows_of(1).q_begin) {
      first_of_tile1 = e;
      break;
    }
  ASSERT_TRUE(first_of_tile1.has_value());
  ASSERT_TRUE(s.stepper().select(*first_of_tile1));
  s.comparison();
  for (int i = 0; i < 500 && !s.prefetch_idle(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(s.prefetch_idle());
  const RunReference& ref = *s.run().reference;
  EXPECT_TRUE(ref.has_cached(rows_of(1))) << "the selection's own rows";
  EXPECT_TRUE(ref.has_cached(rows_of(2))) << "the next row block in stepping order";
  EXPECT_TRUE(ref.has_cached(rows_of(0))) << "the previous one";
  EXPECT_TRUE(ref.has_cached(rows_of(3))) << "the one after next";
  EXPECT_FALSE(ref.has_cached(rows_of(4))) << "only the neighbours";
  EXPECT_FALSE(ref.has_cached(rows_of(5)));
  // The prefetched row block is the one a later comparison uses: stepping into tile 2 compares
  // against it and gives the analysis's verdict.
  const size_t at = s.stepper().scope_position();
  size_t steps = 0;
  while (run.headers[*s.selected()].q_begin != rows_of(2).q_begin) {
    ASSERT_TRUE(s.stepper().step(1));
    ++steps;
  }
  EXPECT_EQ(s.stepper().scope_position(), at + steps);
  const EventComparison& cmp = s.comparison();
  EXPECT_EQ(cmp.event_index, *s.selected());
  EXPECT_EQ(cmp.passes, captured.report->events[*s.selected()].passes);
}

TEST(ViewerSession, OpensOnTheFirstDivergenceAndFollowsTheSelection) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const auto path = dir.path() / "run.trace.safetensors";
  test::capture_cpu(test::splitk_small(Fault::double_count_l), seed, path);
  JobProgress progress;
  LoadedRun loaded = load_run_file(path, progress);
  ASSERT_TRUE(loaded.valid());
  EXPECT_EQ(loaded.path, path);
  EXPECT_EQ(loaded.display_name(), "run.trace.safetensors");
  // The analysis it carries is the analysis of the file.
  const AnalysisReport direct = analyze_run(open_run(path));
  EXPECT_EQ(loaded.report->first_divergence.event_index, direct.first_divergence.event_index);
  EXPECT_EQ(loaded.report->symptom.kind, direct.symptom.kind);

  ViewerSession s;
  EXPECT_FALSE(s.has_run());
  s.open(std::move(loaded));
  ASSERT_TRUE(s.has_run());
  ASSERT_EQ(s.selected(), static_cast<size_t>(direct.first_divergence.event_index));
  EXPECT_EQ(s.pairs(), (std::vector<std::pair<int32_t, int32_t>>{{0, 0}, {0, 1}}));
  const auto [b, h] = s.pair();
  EXPECT_EQ(b, direct.first_divergence.header.batch);
  EXPECT_EQ(h, direct.first_divergence.header.head);

  // The selected event beside its reference: the trace side is the payload's O/l.
  const EventComparison& cmp = s.comparison();
  const size_t e = *s.selected();
  EXPECT_EQ(cmp.event_index, e);
  EXPECT_FALSE(cmp.passes);
  for (int32_t r = 0; r < cmp.rows; ++r)
    for (int32_t c = 0; c < cmp.head_dim; c += 7)
      EXPECT_FLOAT_EQ(cmp.o_norm_trace.values[static_cast<size_t>(r * cmp.head_dim + c)], o_norm(s.view(), e, r, c));

  // The overview grid is the shown pair's.
  const ErrorGrid* g = s.overview_grid();
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->head, h);
  EXPECT_EQ(g->stage, kOverviewGrid);
  EXPECT_EQ(g->grid.rows, s.view().attention.seq_q);
  const int32_t final_stage = s.view().stage_index("final");
  ASSERT_GE(final_stage, 0);
  s.grid_stage = final_stage;
  ASSERT_NE(s.overview_grid(), nullptr);
  EXPECT_EQ(s.overview_grid()->stage, final_stage);
  EXPECT_EQ(s.overview_grid()->column_keys, (std::vector<int64_t>{s.view().attention.seq_kv})) << "all keys";
  s.grid_stage = kOverviewGrid;

  // Another pair: its first failing event.
  const int32_t other = h == 0 ? 1 : 0;
  s.select_pair(0, other);
  EXPECT_EQ(s.pair().second, other);
  EXPECT_TRUE(s.stepper().fails(*s.selected()));
  EXPECT_EQ(s.navigator().front().head, other) << "the navigator follows the pair";
  EXPECT_EQ(s.overview_grid()->head, other) << "and the grid";

  // --select
  EXPECT_TRUE(s.apply(parse_select_request("event:3")));
  EXPECT_EQ(s.selected(), 3u);
  EXPECT_EQ(s.comparison().event_index, 3u);
  EXPECT_TRUE(s.apply(parse_select_request("first-divergence")));
  EXPECT_EQ(s.selected(), static_cast<size_t>(direct.first_divergence.event_index));
  EXPECT_THROW(s.apply(parse_select_request("event:100000")), std::out_of_range);
  for (const char* bad : {"event:", "event:x", "first", "event:-1", ""})
    EXPECT_THROW(parse_select_request(bad), std::invalid_argument) << bad;
  s.close();
  EXPECT_FALSE(s.has_run());
  EXPECT_THROW(s.comparison(), std::logic_error);
}

TEST(ViewerSession, MaskedNaNShowsInTheSelectedTrace) {
  TS_SEEDED(seed);
  ViewerSession s;
  s.open(test::capture_cpu(test::splitk_causal_masked(Fault::masked_nan), seed));
  ASSERT_TRUE(s.report().first_divergence.found);
  const EventComparison& cmp = s.comparison();
  size_t nan = 0;
  for (float v : cmp.o_norm_trace.values) nan += std::isnan(v);
  EXPECT_GT(nan, 0u) << "the first divergence of masked_nan holds NaN";
  for (float v : cmp.o_norm_reference.values) EXPECT_FALSE(std::isnan(v)) << "the reference never does";
}

TEST(LoadedRun, ErrorsAndCancellationOfTheWorkerFunctions) {
  TS_SEEDED(seed);
  test::TempDir dir;
  JobProgress progress;
  const auto corrupt = dir.path() / "corrupt.trace.safetensors";
  std::ofstream(corrupt) << "this is not a safetensors file, only some text";
  try {
    load_run_file(corrupt, progress);
    FAIL() << "a corrupt file opened";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt.trace.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_run_file(dir.path() / "missing.trace.safetensors", progress), FileReadError);

  // A capture cancelled through the job: cancelled, not failed, and nothing saved.
  BackgroundJob<LoadedRun> job;
  AttentionConfig big = test::splitk_small(Fault::none);
  big.seq_q = 512;
  big.seq_kv = 4096;
  const auto out = dir.path() / "never.trace.safetensors";
  ASSERT_TRUE(job.start("capture", [&](JobProgress& p) {
    return capture_and_analyse(test::cpu_spec(big, seed), p, out);
  }));
  while (job.progress().done == 0 && !job.poll()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  job.cancel();
  while (!job.poll() && job.running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(job.state(), JobState::cancelled) << job.error();
  EXPECT_FALSE(std::filesystem::exists(out));

  // A bad spec fails with the capture's own message.
  CaptureSpec bad = test::cpu_spec(test::splitk_small(Fault::none), seed);
  bad.config.head_dim = 48;
  EXPECT_THROW(capture_and_analyse(bad, progress), ConfigError);
}

TEST(ABPairing, EventsPairByIdentityAndTheArraysAreTheirDifference) {
  TS_SEEDED(seed);
  ViewerSession s;
  s.open(test::capture_cpu(test::splitk_small(Fault::double_count_l), seed));
  JobProgress progress;
  ABResult ab = compare_with(s.run(), test::capture_cpu(test::splitk_small(Fault::none), seed), progress);
  EXPECT_TRUE(ab.report->inputs_identical);
  EXPECT_TRUE(ab.report->tilings_match);
  s.set_b(std::move(ab));
  ASSERT_TRUE(s.has_b());
  EXPECT_TRUE(s.pairing().per_event);
  const RunView& a = s.view();
  const RunView& b = *s.b().run;
  for (size_t i = 0; i < a.num_events(); ++i) {
    const auto j = s.pairing().b_event_for(a.headers[i]);
    ASSERT_TRUE(j.has_value()) << "event " << i;
    const EventHeader &ha = a.headers[i], &hb = b.headers[*j];
    EXPECT_EQ(std::tie(ha.stage, ha.batch, ha.head, ha.q_begin, ha.rows, ha.split, ha.step, ha.keys[0].begin, ha.keys[0].end),
              std::tie(hb.stage, hb.batch, hb.head, hb.q_begin, hb.rows, hb.split, hb.step, hb.keys[0].begin, hb.keys[0].end));
  }
  // The selected (first divergent, a reduce) event: A | B | A - B of O/l from the payloads.
  const size_t e = *s.selected();
  const size_t f = *s.pairing().b_event_for(a.headers[e]);
  const ABArrays arr = s.ab_arrays(true);
  ASSERT_EQ(arr.a.rows, a.headers[e].rows);
  ASSERT_EQ(arr.a.cols, a.head_dim);
  EXPECT_EQ(arr.first_row, a.headers[e].q_begin);
  EXPECT_NE(arr.what.find("splitk.reduce"), std::string::npos) << arr.what;
  double max_diff = 0;
  for (int32_t r = 0; r < arr.a.rows; ++r)
    for (int32_t c = 0; c < arr.a.cols; ++c) {
      const size_t at = static_cast<size_t>(r * arr.a.cols + c);
      EXPECT_FLOAT_EQ(arr.a.values[at], o_norm(a, e, r, c));
      EXPECT_FLOAT_EQ(arr.b.values[at], o_norm(b, f, r, c));
      EXPECT_FLOAT_EQ(arr.diff.values[at], o_norm(a, e, r, c) - o_norm(b, f, r, c));
      max_diff = std::max(max_diff, std::abs(double{arr.diff.values[at]}));
    }
  EXPECT_GT(max_diff, 1e-3) << "the faulty reduce differs from the correct one";
  // Raw O as stored.
  const ABArrays raw = s.ab_arrays(false);
  EXPECT_EQ(raw.a.values[5], a.event(e).o[5]);
}

TEST(ABPairing, DifferentTilingsMeetAtTheFinalOutput) {
  TS_SEEDED(seed);
  ViewerSession s;
  s.open(test::capture_cpu(test::splitk_small(Fault::none), seed));
  AttentionConfig two = test::splitk_small(Fault::none);
  two.num_splits = 2;
  JobProgress progress;
  s.set_b(compare_with(s.run(), test::capture_cpu(two, seed), progress));
  EXPECT_FALSE(s.pairing().per_event);
  EXPECT_FALSE(s.pairing().b_event_for(s.view().headers[0]).has_value());
  const ABArrays arr = s.ab_arrays(true);
  const auto [batch, head] = s.pair();
  const RunView& a = s.view();
  ASSERT_EQ(arr.a.rows, a.attention.seq_q);
  ASSERT_EQ(arr.a.cols, a.attention.head_dim);
  // The launch's output tensors, element by element.
  const int64_t base = (int64_t{batch} * a.attention.heads_q + head) * a.attention.seq_q * a.attention.head_dim;
  for (size_t i = 0; i < arr.a.values.size(); i += 13) {
    EXPECT_EQ(arr.a.values[i], a.output->get_float(base + static_cast<int64_t>(i)));
    EXPECT_EQ(arr.b.values[i], s.b().run->output->get_float(base + static_cast<int64_t>(i)));
    EXPECT_EQ(arr.diff.values[i], arr.a.values[i] - arr.b.values[i]);
  }
  // Without the output tensor, the events of the last final-kind stage give the same array (the
  // output stage's own events when the run holds them; here the kernel's "final" stage's).
  RunView no_output = a;
  no_output.output.reset();
  no_output.headers.resize(no_output.recorded_events);
  no_output.stages.pop_back();
  ASSERT_EQ(no_output.stages.back().name, "final");
  const FloatGrid assembled = final_output_grid(no_output, batch, head);
  ASSERT_EQ(assembled.values.size(), arr.a.values.size());
  for (size_t i = 0; i < assembled.values.size(); ++i) EXPECT_EQ(assembled.values[i], arr.a.values[i]) << i;
  EXPECT_THROW(grid_difference(arr.a, FloatGrid{{1.0f}, 1, 1, {}}), GridShapeError);
  s.clear_b();
  EXPECT_FALSE(s.has_b());
  EXPECT_THROW(s.ab_arrays(true), std::logic_error);
}

}  // namespace
}  // namespace ts
