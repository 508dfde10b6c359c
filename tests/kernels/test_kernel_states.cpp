// The correct kernels' intermediate states agree with the float64 reference over each event's
// own key ranges: FA-1's running state after every kv tile, Split-K's running state after every
// kv tile of a split (`splitk.tile`, when asked for), its partials and its reduce steps (through
// trace events), Split-K's partial buffers (through the launcher); and every event's header
// says which rows and keys it holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/kernel_list.h"
#include "tests/kernels/kernel_test_util.h"

namespace ts {
namespace {

AttentionConfig cfg(KernelKind k, DType dt, int64_t d, int64_t sq, int64_t skv, bool causal,
                    int64_t splits = 0) {
  AttentionConfig c;
  c.kernel = k;
  c.dtype = dt;
  c.head_dim = d;
  c.batch = 2;
  c.heads = 2;
  c.seq_q = sq;
  c.seq_kv = skv;
  c.causal = causal;
  c.num_splits = splits_kv(k) ? splits : 0;
  return c;
}

constexpr double kStateTol = test::kStateTolerance;

int32_t key_of_tile(const Tiling& t, int64_t tile) {
  return static_cast<int32_t>(std::min<int64_t>(tile * t.block_n, t.seq_kv));
}

// The kv tiles holding a key that some row of query tile q sees, found row by row and key tile
// by key tile from the reference's mask (AttentionSpec::visible_keys): the tiles the kernels
// must visit (FA-1), or visit of their split (Split-K), and no others.
KvTileRange tiles_seen_by(const AttentionConfig& c, const Tiling& t, int32_t q) {
  const AttentionSpec spec = attention_spec(c);
  int32_t first = t.num_kv_tiles, last = -1;
  for (int64_t i = int64_t{q} * t.block_m; i < int64_t{q} * t.block_m + t.rows_in_q_tile(q); ++i) {
    const AttentionSpec::KeySpan keys = spec.visible_keys(0, i);
    for (int32_t tile = 0; tile < t.num_kv_tiles; ++tile)
      if (std::max<int64_t>(keys.begin, int64_t{tile} * t.block_n) <
          std::min<int64_t>(keys.end, int64_t{tile + 1} * t.block_n)) {
        first = std::min(first, tile);
        last = std::max(last, tile);
      }
  }
  return last < 0 ? KvTileRange{0, 0} : KvTileRange{first, last + 1};
}

// A split's tiles that its block visits: those of the split that its query tile sees.
KvTileRange split_tiles_seen_by(const AttentionConfig& c, const Tiling& t, int32_t q, int32_t split) {
  const KvTileRange seen = tiles_seen_by(c, t, q), range = t.split_kv_tiles(split);
  const int32_t begin = std::max(seen.begin, range.begin), end = std::min(seen.end, range.end);
  return end > begin ? KvTileRange{begin, end} : KvTileRange{begin, begin};
}

int32_t kv_head_of_config(const AttentionConfig& c, int32_t head) {
  return static_cast<int32_t>(head / (c.heads / c.kv_heads()));
}

void expect_one_range(const EventHeader& e, int32_t begin, int32_t end) {
  EXPECT_EQ(e.num_key_ranges, 1) << test::describe(e);
  EXPECT_EQ(e.keys[0].begin, begin) << test::describe(e);
  EXPECT_EQ(e.keys[0].end, end) << test::describe(e);
}

// FA-1's events, in the kernel's order: per block a step per kv tile it visits, then its final
// output; headers against what the block covers, payloads against the reference.
void check_fa1_events(const AttentionConfig& c, uint64_t seed) {
  SCOPED_TRACE(test::describe(c));
  const DType dt = c.dtype;
  const test::Run run = test::run_config(c, test::backend_under_test(), seed, true, 2);
  const CapturedEvents& ev = run.out.events;
  const test::EventReference ref(c, run.inputs, ev);
  ASSERT_EQ(ev.dropped, 0u);
  ASSERT_EQ(ev.size(), ev.requested);
  EXPECT_TRUE(ev.missing.empty());
  ASSERT_EQ(ev.stages, kernel_stage_table(KernelKind::fa1));
  const Tiling& t = run.out.tiling;
  // Every block: one fa1.step per visited kv tile, numbered 0.., then its final event.
  size_t i = 0;
  for (int32_t b = 0; b < c.batch; ++b)
    for (int32_t h = 0; h < c.heads; ++h)
      for (int32_t q = 0; q < t.num_q_tiles; ++q) {
        const KvTileRange visited = tiles_seen_by(c, t, q);
        const int32_t steps = visited.size();
        for (int32_t j = 0; j <= steps; ++j, ++i) {
          ASSERT_LT(i, ev.size());
          const EventHeader& e = ev.headers[i];
          const bool is_final = j == steps;
          EXPECT_EQ(e.stage, is_final ? kFa1FinalStage : kFa1StepStage);
          EXPECT_EQ(e.convention, is_final ? tilescope::kNormalized : 0);
          EXPECT_EQ(e.batch, b);
          EXPECT_EQ(e.head, h);
          EXPECT_EQ(e.kv_head, kv_head_of_config(c, h));
          EXPECT_EQ(e.q_begin, q * t.block_m);
          EXPECT_EQ(e.rows, t.rows_in_q_tile(q));
          EXPECT_EQ(e.split, -1);
          EXPECT_EQ(e.step, j) << "the final event comes after the block's steps";
          EXPECT_EQ(e.block, (b * c.heads + h) * t.num_q_tiles + q);
          // The j-th step holds keys [0, end of the j-th visited tile); the final output every key.
          expect_one_range(e, 0, is_final ? int32_t(c.seq_kv) : key_of_tile(t, visited.begin + j + 1));
          const test::EventError err = test::event_error(ev, i, ref);
          const double tol = is_final ? test::final_tolerance(dt) : kStateTol;
          EXPECT_LE(err.max(), tol) << "event " << i << " " << test::describe(e) << " m " << err.m << " l "
                                    << err.l << " o " << err.o;
        }
      }
  EXPECT_EQ(i, ev.size());
}

TEST(KernelStates, Fa1StepsFollowTheReferenceKeyRangeByKeyRange) {
  TS_SEEDED(seed);
  for (DType dt : {DType::f32, DType::bf16})
    check_fa1_events(cfg(KernelKind::fa1, dt, 64, 130, 200, true), test::case_seed(seed, int(dt)));
}

TEST(KernelStates, Fa1StepsFollowTheReferenceUnderGqaWindowsAndSoftcap) {
  TS_SEEDED(seed);
  // GQA 4 query heads on 2 kv heads, causal with a left window of 70 keys: each query tile of 64
  // rows skips the kv tiles before its window (FA-1 tiles of 64 keys), softcap 5.
  AttentionConfig c = cfg(KernelKind::fa1, DType::f32, 64, 300, 320, true);
  c.heads = 4;
  c.heads_kv = 2;
  c.window_left = 70;
  c.softcap = 5.0;
  check_fa1_events(c, test::case_seed(seed, 1));
  // MQA, a two-sided window without causal, more queries than keys: the first query tiles see
  // no key at all (no step), the rest a band around their diagonal.
  c = cfg(KernelKind::fa1, DType::bf16, 32, 200, 120, false);
  c.heads = 3;
  c.heads_kv = 1;
  c.window_left = 20;
  c.window_right = 10;
  check_fa1_events(c, test::case_seed(seed, 2));
}

TEST(KernelStates, SplitkPartialBuffersFollowTheReferenceSplitBySplit) {
  TS_SEEDED(seed);
  for (int64_t splits : {1, 3, 5}) {
    const AttentionConfig c = cfg(KernelKind::splitk, DType::f16, 128, 40, 300, true, splits);
    SCOPED_TRACE(test::describe(c));
    const test::Run run = test::run_config(c, test::backend_under_test(), test::case_seed(seed, splits), false, 2);
    const ReferenceInputs inputs(attention_spec(c), test::head_inputs(c, run.inputs));
    const Tiling& t = run.out.tiling;
    const int64_t d = c.head_dim;
    ASSERT_EQ(run.out.partial_m.size(), size_t(c.batch * c.heads * c.seq_q * splits));
    ASSERT_EQ(run.out.partial_o.size(), run.out.partial_m.size() * size_t(d));
    std::vector<int64_t> split_ends;
    for (int32_t s = 0; s < t.num_splits; ++s) split_ends.push_back(key_of_tile(t, t.split_kv_tiles(s).end));
    for (int32_t b = 0; b < c.batch; ++b)
      for (int32_t h = 0; h < c.heads; ++h)
        for (int32_t qt = 0; qt < t.num_q_tiles; ++qt) {
          const RowBlock block{b, h, qt * t.block_m, t.rows_in_q_tile(qt)};
          const auto rb = compute_row_block(inputs, block, split_ends);
          for (int32_t s = 0; s < t.num_splits; ++s) {
            const KvTileRange range = t.split_kv_tiles(s);
            const KeyRange keys{key_of_tile(t, range.begin), key_of_tile(t, range.end)};
            const RefState want = rb->state(std::span<const KeyRange>(&keys, 1));
            for (int32_t r = 0; r < block.rows; ++r) {
              const int64_t q = block.q_begin + r;
              const size_t row = size_t(((b * c.heads + h) * c.seq_q + q) * splits + s);
              const float m = run.out.partial_m[row], l = run.out.partial_l[row];
              if (want.l[r] == 0) {  // the split sees no key of this query
                EXPECT_EQ(m, -INFINITY) << "q " << q << " split " << s;
                EXPECT_EQ(l, 0.0f) << "q " << q << " split " << s;
              } else {
                EXPECT_NEAR(m, want.m[r], kStateTol * std::max(1.0, std::abs(want.m[r]))) << "q " << q;
                EXPECT_NEAR(l, want.l[r], kStateTol * want.l[r]) << "q " << q;
              }
              for (int64_t e = 0; e < d; ++e)
                ASSERT_NEAR(run.out.partial_o[row * d + e], want.o[r * d + e], kStateTol * std::max(1.0, want.l[r]))
                    << "b" << b << " h" << h << " q" << q << " split " << s << " col " << e;
            }
          }
        }
  }
}

// At one split, with no fault and no reduce event to record, the partial writes the output and
// the reduce is not launched (LaunchPlan::partial_writes_output): the output must be the reduce's
// bit for bit (a traced run that records the reduce's events runs it), meet the rule against the
// reference, and the partial's own events must still be recorded. Shapes drawn fresh: dtype, head
// dim, query rows (decode and several tiles), keys, causal, window, GQA and softcap.
TEST(KernelStates, SplitkAtOneSplitThePartialWritesTheOutputTheReduceWould) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const DType dtypes[] = {DType::bf16, DType::f16, DType::f32};
  const int64_t dims[] = {32, 64, 128, 256};
  const int64_t queries[] = {1, 3, 8, 21};
  for (int trial = 0; trial < 6; ++trial) {
    AttentionConfig c = cfg(KernelKind::splitk, dtypes[rng() % 3], dims[rng() % 4], queries[rng() % 4],
                            1 + int64_t(rng() % 700), rng() % 2 == 0, 1);
    c.heads = 4;
    c.heads_kv = rng() % 2 == 0 ? 2 : 4;
    if (rng() % 3 == 0) c.window_left = int64_t(rng() % 200);
    if (rng() % 3 == 0) c.softcap = 10.0 + double(rng() % 20);
    SCOPED_TRACE(test::describe(c));
    const uint64_t inputs_seed = test::case_seed(seed, uint64_t(trial));

    const test::Run plain = test::run_config(c, test::backend_under_test(), inputs_seed, false, 2);
    const LaunchPlan plain_plan = test::plan_of(plain.out, {});
    EXPECT_TRUE(plain_plan.partial_writes_output);
    ASSERT_EQ(plain_plan.kernels.size(), 1u) << "the reduce is not launched";
    const ReferenceOutput want = test::reference_of(c, plain.inputs);
    const test::RuleCheck rule = test::check_rule(c, plain.inputs, plain.out, want);
    EXPECT_TRUE(rule.passes()) << rule.describe();

    // Tracing everything runs the reduce, which writes the output from the partial buffers.
    test::RunOptions all;
    all.trace = true;
    all.cpu_workers = 2;
    const test::Run traced = test::run_config(c, test::backend_under_test(), inputs_seed, all);
    const LaunchPlan traced_plan = test::plan_of(traced.out, all);
    EXPECT_FALSE(traced_plan.partial_writes_output);
    ASSERT_EQ(traced_plan.kernels.size(), 2u);
    ASSERT_EQ(traced.inputs.q.bytes, plain.inputs.q.bytes);
    EXPECT_EQ(plain.out.o.bytes, traced.out.o.bytes) << "the output differs from the reduce's";
    ASSERT_EQ(plain.out.lse.size(), traced.out.lse.size());
    for (size_t r = 0; r < plain.out.lse.size(); ++r)
      ASSERT_EQ(plain.out.lse[r], traced.out.lse[r]) << "LSE of row " << r;

    // Tracing the partials alone: no reduce, and the partial events are there.
    test::RunOptions partials = all;
    partials.filter.stage_mask = uint64_t{1} << kSplitkPartialStage;
    const test::Run only_partials = test::run_config(c, test::backend_under_test(), inputs_seed, partials);
    EXPECT_EQ(test::plan_of(only_partials.out, partials).kernels.size(), 1u);
    EXPECT_EQ(only_partials.out.o.bytes, plain.out.o.bytes);
    EXPECT_EQ(only_partials.out.events.headers.size(),
              size_t(c.batch * c.heads * only_partials.out.tiling.num_q_tiles));
    for (const EventHeader& h : only_partials.out.events.headers) EXPECT_EQ(h.stage, kSplitkPartialStage);
  }
  // A fault built in, or more than one split: the reduce runs.
  AttentionConfig faulty = cfg(KernelKind::splitk, DType::bf16, 64, 1, 300, false, 1);
  faulty.fault = Fault::double_count_l;
  EXPECT_EQ(plan_launch(faulty, kCpuNominalSmCount, {}).kernels.size(), 2u);
  const LaunchPlan two = plan_launch(cfg(KernelKind::splitk, DType::bf16, 64, 1, 300, false, 2), kCpuNominalSmCount, {});
  EXPECT_FALSE(two.partial_writes_output);
  EXPECT_EQ(two.kernels.size(), 2u);
  // Split-K 2's partial (FA-2's kernel) does not write the output: its reduce runs at one split.
  EXPECT_EQ(plan_launch(cfg(KernelKind::splitk2, DType::bf16, 64, 1, 300, false, 1), kCpuNominalSmCount, {}).kernels.size(),
            2u);
}

// The error of a p_rounded stage's O (splitk2: P rounded to the input dtype before P V) against
// the float64 reference, in units of what rounding P may do: each term p v of a row's O moves by
// at most the dtype's unit roundoff u times |p v|, so O by at most u l max|v|. Returns the worst
// |got - expected| / (u l max|v| + float32's share, kStateTol max(1, |expected|)) over the
// event's rows and columns: at most 1 when P's rounding is all that differs.
double p_rounding_units(const CapturedEvents& ev, size_t i, const test::EventReference& ref, DType dtype, double v_max) {
  const double u = dtype == DType::bf16 ? 0x1p-8 : 0x1p-11;
  const EventHeader& h = ev.headers[i];
  const RefState want = ref.expected(h);
  const size_t rows = static_cast<size_t>(ev.max_rows), d = static_cast<size_t>(ev.head_dim);
  double worst = 0.0;
  for (size_t r = 0; r < static_cast<size_t>(h.rows); ++r)
    for (size_t c = 0; c < d; ++c) {
      const double got = ev.o[(i * rows + r) * d + c], expected = want.o[r * d + c];
      if (std::isnan(got)) return INFINITY;
      const double bound = u * want.l[r] * v_max + kStateTol * std::max(1.0, std::abs(expected));
      worst = std::max(worst, std::abs(got - expected) / bound);
    }
  return worst;
}

// Split-K's events (splitk, or splitk2 with its own stage names), in the kernels' order: per partial block its `splitk.tile` events (when
// on) and its partial; then per reduce block a reduce event per split and the final output.
// Every header is checked against what the block covers, every payload against the reference.
void check_splitk_events(const AttentionConfig& c, uint64_t seed, bool tile_events) {
  SCOPED_TRACE(test::describe(c) + (tile_events ? ", tile events" : ", no tile events"));
  const test::Run run = test::run_config(c, test::backend_under_test(), seed,
                                         {.trace = true, .cpu_workers = 2, .tile_events = tile_events});
  const CapturedEvents& ev = run.out.events;
  const test::EventReference ref(c, run.inputs, ev);
  const Tiling& t = run.out.tiling;
  ASSERT_EQ(ev.dropped, 0u);
  ASSERT_EQ(ev.size(), ev.requested);
  EXPECT_TRUE(ev.missing.empty());
  ASSERT_EQ(ev.stages, kernel_stage_table(c));
  double v_max = 0.0;
  for (int64_t e = 0; e < run.inputs.v.numel(); ++e) v_max = std::max(v_max, std::abs(double(run.inputs.v.get_float(e))));
  size_t i = 0;
  int tile_event_count = 0;
  const auto check_payload = [&](size_t index) {
    const test::EventError err = test::event_error(ev, index, ref);
    const StageInfo& stage = ev.stages[size_t(ev.headers[index].stage)];
    if (stage.p_rounded && stage.kind != StageKind::final) {
      // m and l are float32 sums of the unrounded P; O takes P rounded.
      EXPECT_LE(std::max(err.m, err.l), kStateTol) << "event " << index << " " << test::describe(ev.headers[index]);
      EXPECT_LE(p_rounding_units(ev, index, ref, c.dtype, v_max), 1.0)
          << "event " << index << " " << test::describe(ev.headers[index]) << ": o " << err.o;
      return;
    }
    const bool is_final = ev.headers[index].stage == kSplitkFinalStage;
    EXPECT_LE(err.max(), is_final ? test::final_tolerance(c.dtype) : kStateTol) << "event " << index << " " << test::describe(ev.headers[index]) << ": m "
                                    << err.m << " l " << err.l << " o " << err.o;
  };
  // The partial pass: blocks (q tile, split) x head x batch.
  for (int32_t b = 0; b < c.batch; ++b)
    for (int32_t h = 0; h < c.heads; ++h)
      for (int32_t qt = 0; qt < t.num_q_tiles; ++qt)
        for (int32_t s = 0; s < t.num_splits; ++s) {
          const KvTileRange range = t.split_kv_tiles(s);
          // The tiles a block visits: its split's that its query tile sees.
          const KvTileRange visited = split_tiles_seen_by(c, t, qt, s);
          const int32_t block = (b * c.heads + h) * t.num_q_tiles * t.num_splits + qt * t.num_splits + s;
          const int32_t tiles = tile_events ? visited.size() : 0;
          for (int32_t j = 0; j <= tiles; ++j, ++i) {
            ASSERT_LT(i, ev.size());
            const EventHeader& e = ev.headers[i];
            const bool is_partial = j == tiles;
            EXPECT_EQ(e.stage, is_partial ? kSplitkPartialStage : kSplitkTileStage) << test::describe(e);
            EXPECT_EQ(e.convention, 0);
            EXPECT_EQ(e.batch, b);
            EXPECT_EQ(e.head, h);
            EXPECT_EQ(e.kv_head, kv_head_of_config(c, h));
            EXPECT_EQ(e.q_begin, qt * t.block_m);
            EXPECT_EQ(e.rows, t.rows_in_q_tile(qt));
            EXPECT_EQ(e.split, s);
            EXPECT_EQ(e.step, j) << "the partial comes after the block's tile events";
            EXPECT_EQ(e.block, block);
            // A tile event holds the split's keys up to the end of its tile (the tiles it skipped
            // hold none its rows see); the partial the whole split's.
            expect_one_range(e, key_of_tile(t, range.begin),
                             key_of_tile(t, is_partial ? range.end : visited.begin + j + 1));
            tile_event_count += !is_partial;
            check_payload(i);
          }
        }
  // The reduce pass: blocks q tile x head x batch.
  for (int32_t b = 0; b < c.batch; ++b)
    for (int32_t h = 0; h < c.heads; ++h)
      for (int32_t qt = 0; qt < t.num_q_tiles; ++qt)
        for (int32_t s = 0; s <= t.num_splits; ++s, ++i) {
          ASSERT_LT(i, ev.size());
          const EventHeader& e = ev.headers[i];
          const bool is_final = s == t.num_splits;
          EXPECT_EQ(e.stage, is_final ? kSplitkFinalStage : kSplitkReduceStage);
          EXPECT_EQ(e.convention, is_final ? tilescope::kNormalized : 0);
          EXPECT_EQ(e.batch, b);
          EXPECT_EQ(e.head, h);
          EXPECT_EQ(e.kv_head, kv_head_of_config(c, h));
          EXPECT_EQ(e.q_begin, qt * t.block_m);
          EXPECT_EQ(e.split, is_final ? -1 : s) << "a reduce event names the split it just merged";
          EXPECT_EQ(e.step, s);
          EXPECT_EQ(e.block, (b * c.heads + h) * t.num_q_tiles + qt);
          // After merging split s: keys [0, end of split s).
          expect_one_range(e, 0, is_final ? int32_t(c.seq_kv) : key_of_tile(t, t.split_kv_tiles(s).end));
          check_payload(i);
        }
  EXPECT_EQ(i, ev.size());
  if (tile_events) {
    EXPECT_GT(tile_event_count, 0);
  } else {
    EXPECT_EQ(tile_event_count, 0);
  }
}

TEST(KernelStates, SplitkEventsFollowTheReference) {
  TS_SEEDED(seed);
  // 8 splits over 5 kv tiles: 3 empty splits; causal with seq_q > seq_kv: rows that see nothing.
  check_splitk_events(cfg(KernelKind::splitk, DType::f32, 64, 330, 300, true, 8), test::case_seed(seed, 1), false);
}

TEST(KernelStates, SplitkTileEventsFollowTheReferenceAfterEveryKvTile) {
  TS_SEEDED(seed);
  // 6 kv tiles in 4 splits of 2 (the last empty); causal, 300 queries on 700 keys: early query
  // tiles stop inside split 1 or 2, so splits visit 0, 1 or 2 tiles.
  AttentionConfig c = cfg(KernelKind::splitk, DType::f32, 64, 300, 700, true, 4);
  c.batch = 1;
  check_splitk_events(c, test::case_seed(seed, 2), true);
  // Not causal, bf16, one head of an odd size: every split visits all its tiles.
  c = cfg(KernelKind::splitk, DType::bf16, 128, 13, 1000, false, 3);
  c.heads = 1;
  check_splitk_events(c, test::case_seed(seed, 3), true);
}

TEST(KernelStates, SplitkEventsFollowTheReferenceUnderGqaWindowsAndSoftcap) {
  TS_SEEDED(seed);
  // The decode shape at a small size: 8 query heads on 2 kv heads, one query, causal with a left
  // window of 300 keys over 2000 (kv tiles of 64 keys: the splits before the window visit
  // nothing), softcap 30.
  AttentionConfig c = cfg(KernelKind::splitk, DType::bf16, 128, 1, 2000, true, 6);
  c.batch = 1;
  c.heads = 8;
  c.heads_kv = 2;
  c.window_left = 300;
  c.softcap = 30.0;
  check_splitk_events(c, test::case_seed(seed, 1), true);
  // MQA, a two-sided window without causal, 40 queries on 300 keys, softcap 3.
  c = cfg(KernelKind::splitk, DType::f32, 64, 40, 300, false, 3);
  c.heads = 3;
  c.heads_kv = 1;
  c.window_left = 60;
  c.window_right = 20;
  c.softcap = 3.0;
  check_splitk_events(c, test::case_seed(seed, 2), true);
  check_splitk_events(c, test::case_seed(seed, 3), false);
  // A right-only window and more queries than keys: rows and query tiles that see no key.
  c = cfg(KernelKind::splitk, DType::f16, 32, 400, 300, false, 4);
  c.heads = 1;
  c.window_right = 0;
  check_splitk_events(c, test::case_seed(seed, 4), true);
}

TEST(KernelStates, Splitk2EventsFollowTheReference) {
  TS_SEEDED(seed);
  // FA-2's tiles (128 query rows at head dim 64): 11 kv tiles in 4 splits of 3; causal, 300
  // queries on 700 keys, so early query tiles stop inside a split and skip the later ones.
  AttentionConfig c = cfg(KernelKind::splitk2, DType::bf16, 64, 300, 700, true, 4);
  c.batch = 1;
  check_splitk_events(c, test::case_seed(seed, 1), true);
  check_splitk_events(c, test::case_seed(seed, 2), false);
  // 8 splits over 4 kv tiles (4 empty), more queries than keys under causal: rows that see none.
  c = cfg(KernelKind::splitk2, DType::f16, 128, 230, 200, true, 8);
  c.heads = 1;
  check_splitk_events(c, test::case_seed(seed, 3), true);
  // GQA, a two-sided window without causal, softcap.
  c = cfg(KernelKind::splitk2, DType::bf16, 128, 70, 300, false, 3);
  c.batch = 1;
  c.heads = 4;
  c.heads_kv = 2;
  c.window_left = 60;
  c.window_right = 20;
  c.softcap = 3.0;
  check_splitk_events(c, test::case_seed(seed, 4), true);
}

TEST(KernelStates, SplitkTileEventsOnlyWhenAskedOrSmall) {
  TS_SEEDED(seed);
  const AttentionConfig c = cfg(KernelKind::splitk, DType::f16, 64, 20, 500, false, 2);
  const auto tile_events_of = [&](std::optional<bool> on) {
    const test::Run run = test::run_config(c, test::backend_under_test(), test::case_seed(seed, 4),
                                           {.trace = true, .cpu_workers = 2, .tile_events = on});
    int n = 0;
    for (const EventHeader& h : run.out.events.headers) n += h.stage == kSplitkTileStage;
    return n;
  };
  // 2 heads x 3 query tiles x 4 kv tiles, visited all: one tile event per (head, q tile, kv tile).
  EXPECT_EQ(tile_events_of(true), 2 * 2 * 3 * 4);
  EXPECT_EQ(tile_events_of(false), 0);
  EXPECT_EQ(tile_events_of(std::nullopt), 2 * 2 * 3 * 4) << "a small run gets them by default";

  // By size: on up to kTileEventsByDefaultLimit (batch, head, query tile, kv tile) states.
  AttentionConfig big;
  big.kernel = KernelKind::splitk;
  big.head_dim = 64;       // kv tiles of 128 keys
  big.seq_q = 8 * 256;     // 256 query tiles
  big.seq_kv = 128 * 256;  // 256 kv tiles: 65536 states
  big.num_splits = 16;
  TraceRequest trace;
  trace.enabled = true;
  ASSERT_EQ(int64_t{256} * 256, kTileEventsByDefaultLimit);
  const LaunchPlan at_limit = plan_launch(big, kCpuNominalSmCount, trace);
  EXPECT_TRUE(at_limit.tile_events);
  EXPECT_TRUE(tile_events_by_default(at_limit.config, at_limit.tiling));
  big.seq_kv += 1;  // a 257th kv tile
  const LaunchPlan over = plan_launch(big, kCpuNominalSmCount, trace);
  EXPECT_FALSE(over.tile_events);
  EXPECT_EQ(over.trace_requested, at_limit.trace_requested - int64_t{256} * 256)
      << "without tile events: a partial per (query tile, split), a reduce per split and a final";
  EXPECT_TRUE(plan_launch(big, kCpuNominalSmCount, trace, true).tile_events) << "asked for";
  // What the filters keep is what counts: a head of two, or the query tiles of rows 5..802 (101 of
  // 256), of a run over the limit are under it; a range past the run's rows keeps none.
  big.heads = 2;
  TraceRequest one_head = trace, some_rows = trace;
  one_head.filter.head_begin = 1;
  one_head.filter.head_end = 2;
  some_rows.filter.query_begin = 5;
  some_rows.filter.query_end = 803;
  EXPECT_FALSE(plan_launch(big, kCpuNominalSmCount, trace).tile_events);
  EXPECT_FALSE(plan_launch(big, kCpuNominalSmCount, one_head).tile_events) << "one head: 65792 states";
  big.seq_kv -= 1;
  EXPECT_TRUE(plan_launch(big, kCpuNominalSmCount, one_head).tile_events) << "one head: 65536 states";
  EXPECT_FALSE(plan_launch(big, kCpuNominalSmCount, trace).tile_events) << "two heads";
  const LaunchPlan rows_plan = plan_launch(big, kCpuNominalSmCount, some_rows);
  EXPECT_TRUE(rows_plan.tile_events) << "2 heads x 101 query tiles x 256 kv tiles";
  some_rows.filter.query_begin = 0;
  some_rows.filter.query_end = 129 * 8;  // 129 query tiles: 66048 states
  EXPECT_FALSE(plan_launch(big, kCpuNominalSmCount, some_rows).tile_events);
  big.kernel = KernelKind::fa1;
  big.num_splits = 0;
  EXPECT_FALSE(plan_launch(big, kCpuNominalSmCount, trace, true).tile_events) << "FA-1 has no splits";
}

TEST(KernelStates, FinalEventsEqualTheLaunchersOutput) {
  TS_SEEDED(seed);
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = cfg(k, DType::bf16, 32, 70, 90, true, 2);
    const test::Run run = test::run_config(c, test::backend_under_test(), test::case_seed(seed, int(k)), true, 2);
    const CapturedEvents& ev = run.out.events;
    const size_t rows = size_t(ev.max_rows);
    int finals = 0;
    for (size_t i = 0; i < ev.size(); ++i) {
      const EventHeader& e = ev.headers[i];
      if (ev.stages[size_t(e.stage)].kind != StageKind::final) continue;
      ++finals;
      for (int r = 0; r < e.rows; ++r) {
        const int64_t row = (int64_t(e.batch) * c.heads + e.head) * c.seq_q + e.q_begin + r;
        EXPECT_EQ(ev.m[i * rows + r], run.out.lse[row]);  // bit for bit, -inf too
        EXPECT_EQ(ev.l[i * rows + r], 1.0f);
        for (int64_t col = 0; col < c.head_dim; ++col)
          ASSERT_EQ(ev.o[(i * rows + r) * c.head_dim + col], run.out.o.get_float(row * c.head_dim + col));
      }
      // Rows past the event's rows were never written: still the launcher's NaN poison.
      for (size_t r = size_t(e.rows); r < rows; ++r) EXPECT_TRUE(std::isnan(ev.m[i * rows + r]));
    }
    EXPECT_EQ(finals, c.batch * c.heads * run.out.tiling.num_q_tiles);
  }
}

TEST(KernelStates, ProbesDoNotChangeTheResult) {
  TS_SEEDED(seed);
  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const AttentionConfig c = cfg(k, DType::f16, 64, 100, 150, true, 3);
    const uint64_t inputs_seed = test::case_seed(seed, int(k));
    const test::Run plain = test::run_config(c, test::backend_under_test(), inputs_seed, false, 1);
    const test::Run traced = test::run_config(c, test::backend_under_test(), inputs_seed,
                                              {.trace = true, .cpu_workers = 1, .tile_events = true});
    if (test::testing_cpu()) {  // the same arithmetic, bit for bit
      EXPECT_EQ(plain.out.o.bytes, traced.out.o.bytes);
      EXPECT_EQ(plain.out.lse, traced.out.lse);
    } else {  // nvcc may contract the two builds' arithmetic differently: a last-bit difference
      EXPECT_LE(test::max_abs_error(plain.out.o.to_double(), traced.out.o.to_double()), 2e-3);
      EXPECT_LE(test::max_abs_error(test::to_double(plain.out.lse), test::to_double(traced.out.lse)), 1e-5);
    }
    EXPECT_TRUE(plain.out.events.headers.empty());
    EXPECT_FALSE(traced.out.events.headers.empty());
  }
}

// The traced build of FA-1, FA-2 and the Split-K partial is two kernels over the grid (kernels/
// kernel_registry.h): the blocks that record nothing run the plain build's code in the one, the
// others the traced block in the other. Whatever the filter selects (a head of a batch entry, a
// range of query rows, everything, nothing; or a trace buffer too small for what it selects),
// every block of the output is written (the buffers are poisoned) and is the plain run's, and the
// events of a block are those it records when everything is traced, bit for bit. Shapes drawn
// fresh from what the kernel list builds.
TEST(KernelStates, TracedBuildOfTwoKernelsWritesEveryBlockAndEvent) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  const KernelKind kinds[] = {KernelKind::fa2, KernelKind::splitk, KernelKind::fa1};
  for (int trial = 0; trial < 6; ++trial) {
    const KernelKind kind = kinds[trial % 3];
    const bool splitk = kind == KernelKind::splitk;
    const std::vector<DType> dtypes = built_dtypes(kind);
    const std::vector<int> dims = built_head_dims(kind);
    AttentionConfig c = cfg(kind, dtypes[rng() % dtypes.size()], dims[rng() % dims.size()],
                            splitk ? 1 + int64_t(rng() % 20) : 65 + int64_t(rng() % 200), 1 + int64_t(rng() % 400),
                            rng() % 2 == 0, splitk ? 1 + int64_t(rng() % 3) : 0);
    c.batch = 2;
    c.heads = 3;
    SCOPED_TRACE(test::describe(c));
    const uint64_t inputs_seed = test::case_seed(seed, uint64_t(trial));
    const test::Run plain = test::run_config(c, test::backend_under_test(), inputs_seed, false, 2);

    test::RunOptions everything{.trace = true, .cpu_workers = 2, .tile_events = true};
    const test::Run all = test::run_config(c, test::backend_under_test(), inputs_seed, everything);
    std::map<std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int64_t>, size_t> all_events;
    for (size_t i = 0; i < all.out.events.size(); ++i) {
      const EventHeader& h = all.out.events.headers[i];
      all_events[{h.stage, h.batch, h.head, h.split, h.step, h.q_begin}] = i;
    }

    test::RunOptions one_head = everything, query_rows = everything, nothing = everything;
    one_head.filter.batch_begin = 1;
    one_head.filter.batch_end = 2;
    one_head.filter.head_begin = one_head.filter.head_end = int32_t(rng() % 3);
    ++one_head.filter.head_end;
    query_rows.filter.query_begin = int32_t(rng() % c.seq_q);
    query_rows.filter.query_end = query_rows.filter.query_begin + 1;
    nothing.filter.stage_mask = 0;
    test::RunOptions too_small = everything;  // some recording blocks' events dropped
    too_small.capacity_events = std::max<int64_t>(1, all.out.events.requested / 2);
    struct Case {
      std::string what;
      test::RunOptions opts;
    };
    std::vector<Case> cases = {
        {"one head", one_head}, {"one query row", query_rows}, {"nothing", nothing},
        {"everything", everything}, {"a buffer too small", too_small}};
    // Each stage alone: a recording kernel that tested for fewer stages than the plan counts would
    // leave a block that records only the others unrun.
    for (size_t stage = 0; stage < all.out.events.stages.size(); ++stage) {
      test::RunOptions alone = everything;
      alone.filter.stage_mask = uint64_t{1} << stage;
      cases.push_back({"stage " + all.out.events.stages[stage].name + " alone", alone});
    }
    for (const Case& k : cases) {
      const test::RunOptions& opts = k.opts;
      const test::Run run = test::run_config(c, test::backend_under_test(), inputs_seed, opts);
      const LaunchPlan plan = test::plan_of(run.out, opts);
      const PlannedKernel& traced_kernel = plan.kernels.front();
      SCOPED_TRACE("filter: " + k.what + ": " + std::to_string(traced_kernel.recording_blocks) + " of " +
                   std::to_string(traced_kernel.blocks()) + " blocks record");
      // Each kernel of the plan launches the traced build where one of its blocks records, and the
      // plain build where none does (tracing off costs nothing: PlannedKernel::variant).
      for (const PlannedKernel& pk : plan.kernels)
        EXPECT_EQ(pk.variant, pk.recording_blocks > 0 ? KernelVariant::traced : KernelVariant::plain)
            << kernel_stage_name(pk.stage) << ": " << pk.recording_blocks << " blocks record";
      // The launch ran both kernels side by side, or only the one whose blocks all run.
      if (k.what == "one head") {
        EXPECT_GT(traced_kernel.recording_blocks, 0u);
        EXPECT_LT(traced_kernel.recording_blocks, traced_kernel.blocks());
      } else if (k.what == "nothing") {
        EXPECT_EQ(traced_kernel.recording_blocks, 0u);
        EXPECT_FALSE(traced_kernel.runs_recording_kernel());
        EXPECT_TRUE(traced_kernel.runs_other_kernel());
      } else if (k.what == "everything") {
        EXPECT_EQ(traced_kernel.recording_blocks, traced_kernel.blocks());
      }
      ASSERT_EQ(run.inputs.q.bytes, plain.inputs.q.bytes);
      // Every element written, and the plain run's (bit for bit on the CPU; on the GPU nvcc may
      // contract the builds' arithmetic differently, ProbesDoNotChangeTheResult).
      const std::vector<double> o = run.out.o.to_double(), want = plain.out.o.to_double();
      for (size_t e = 0; e < o.size(); ++e) ASSERT_FALSE(std::isnan(o[e]) && !std::isnan(want[e])) << "element " << e;
      if (test::testing_cpu()) {
        EXPECT_EQ(run.out.o.bytes, plain.out.o.bytes);
        EXPECT_EQ(run.out.lse, plain.out.lse);
      } else {
        EXPECT_LE(test::max_abs_error(o, want), 2e-3);
        EXPECT_LE(test::max_abs_error(test::to_double(run.out.lse), test::to_double(plain.out.lse)), 1e-5);
      }
      // The events, each as tracing everything records it.
      const CapturedEvents& ev = run.out.events;
      const int64_t kept = std::min<int64_t>(int64_t(ev.requested), opts.capacity_events);
      EXPECT_EQ(ev.dropped, uint64_t(int64_t(ev.requested) - kept));
      EXPECT_TRUE(ev.missing.empty());
      EXPECT_EQ(ev.size(), size_t(kept));
      if (k.what == "a buffer too small") {
        EXPECT_GT(ev.dropped, 0u);
      }
      if (opts.filter.stage_mask == 0) {
        EXPECT_EQ(ev.size(), 0u);
      } else if (k.what.rfind("stage ", 0) != 0) {  // a stage alone may be another kernel's
        EXPECT_GT(ev.size(), 0u);
      }
      // (each trace's payload rows: a trace of fewer query rows may hold fewer)
      const size_t rows = size_t(ev.max_rows), all_rows = size_t(all.out.events.max_rows), d = size_t(c.head_dim);
      for (size_t i = 0; i < ev.size(); ++i) {
        const EventHeader& h = ev.headers[i];
        const auto found = all_events.find({h.stage, h.batch, h.head, h.split, h.step, h.q_begin});
        ASSERT_NE(found, all_events.end()) << test::describe(h);
        const size_t j = found->second;
        for (size_t r = 0; r < size_t(h.rows); ++r) {
          ASSERT_EQ(ev.m[i * rows + r], all.out.events.m[j * all_rows + r]) << test::describe(h) << " row " << r;
          ASSERT_EQ(ev.l[i * rows + r], all.out.events.l[j * all_rows + r]) << test::describe(h) << " row " << r;
          for (size_t col = 0; col < d; ++col)
            ASSERT_EQ(ev.o[(i * rows + r) * d + col], all.out.events.o[(j * all_rows + r) * d + col])
                << test::describe(h) << " row " << r << " column " << col;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ts
