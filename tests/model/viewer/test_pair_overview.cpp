// The decode overview (app/model/viewer/pair_overview.h) on Split-K decode runs captured at test
// time (GQA: 8 query heads on 2 kv heads, one query row): a row per (batch, query head), grouped
// by kv head; each cell the worst error / tolerance of that pair's events ending at its column's
// key, written here by brute force from the events' own verdicts; the first divergence's cell is
// its pair's row and key end; a click there selects it. Seeded inputs: a wrong grouping or column
// fails on any seed.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "app/model/viewer/pair_overview.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

// The worst ratio over the pair's compared non-final events ending at `key_end`; NaN for NaN;
// nullopt when none.
std::optional<float> brute_cell(const RunView& run, const AnalysisReport& report, int32_t batch, int32_t head,
                                int64_t key_end) {
  std::optional<float> worst;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    const StageInfo& st = run.stage_of(i);
    if (!report.events[i].compared || h.batch != batch || h.head != head || st.kind == StageKind::final) continue;
    if (event_key_end(h, st, run.attention) != key_end) continue;
    const float v = report.events[i].nan ? std::numeric_limits<float>::quiet_NaN() : report.events[i].worst_ratio;
    worst = !worst ? v : (std::isnan(*worst) || std::isnan(v) ? std::numeric_limits<float>::quiet_NaN()
                                                               : std::max(*worst, v));
  }
  return worst;
}

void expect_cells_are_their_events(const RunView& run, const AnalysisReport& report, const PairOverview& o) {
  ASSERT_EQ(o.values.rows, static_cast<int64_t>(o.pairs.size()));
  ASSERT_EQ(o.values.cols, static_cast<int64_t>(o.column_keys.size()));
  const FloatGridView v = o.values.view();
  for (int64_t r = 0; r < v.rows; ++r)
    for (int64_t c = 0; c < v.cols; ++c) {
      const auto [b, h] = o.pairs[static_cast<size_t>(r)];
      const std::optional<float> want = brute_cell(run, report, b, h, o.column_keys[static_cast<size_t>(c)]);
      SCOPED_TRACE("row " + std::to_string(r) + " col " + std::to_string(c));
      ASSERT_EQ(v.masked(r, c), !want.has_value());
      if (!want) continue;
      if (std::isnan(*want)) EXPECT_TRUE(std::isnan(v.at(r, c)));
      else EXPECT_NEAR(v.at(r, c), *want, 1e-5 * std::max(1.0f, *want));
    }
}

TEST(PairOverview, HeadsTextJoinsRuns) {
  EXPECT_EQ(heads_text({5}), "head 5");
  EXPECT_EQ(heads_text({3, 0, 2, 1}), "heads 0-3");
  EXPECT_EQ(heads_text({0, 2, 4, 5, 6}), "heads 0, 2, 4-6");
  EXPECT_EQ(heads_text({7, 7, 6}), "heads 6-7");
}

TEST(PairOverview, OnlyWhenQueryRowsAreFew) {
  TS_SEEDED(seed);
  EXPECT_TRUE(shows_pair_overview(*test::capture_cpu(test::splitk_decode_gqa(Fault::none), seed).run));
  EXPECT_FALSE(shows_pair_overview(*test::capture_cpu(test::splitk_small(Fault::none), seed).run));
}

TEST(PairOverview, GqaGroupsSideBySideAndTheFirstDivergenceFramed) {
  TS_SEEDED(seed);
  const AttentionConfig config = test::splitk_decode_gqa(Fault::double_count_l);
  const LoadedRun loaded = test::capture_cpu(config, seed);
  const RunView& run = *loaded.run;
  const AnalysisReport& report = *loaded.report;
  const PairOverview o = pair_overview(run, report);

  // Every pair once; 2 batches x 2 kv heads = 4 groups of 4 query heads, each group's rows its
  // batch's query heads on that kv head (heads 4k..4k+3 share kv head k).
  ASSERT_EQ(o.pairs.size(), size_t{16});
  ASSERT_EQ(o.groups.size(), size_t{4});
  for (size_t g = 0; g < o.groups.size(); ++g) {
    const PairGroup& grp = o.groups[g];
    EXPECT_EQ(grp.row1 - grp.row0, 4);
    EXPECT_EQ(grp.batch, static_cast<int32_t>(g / 2));
    EXPECT_EQ(grp.kv_head, static_cast<int64_t>(g % 2));
    for (int64_t r = grp.row0; r < grp.row1; ++r) {
      EXPECT_EQ(o.pairs[static_cast<size_t>(r)].first, grp.batch);
      EXPECT_EQ(o.pairs[static_cast<size_t>(r)].second / 4, grp.kv_head);
    }
    // Labelled by its kv head and the query heads of its rows.
    const int64_t k = grp.kv_head;
    EXPECT_EQ(grp.label, "kv head " + std::to_string(k) + ": heads " + std::to_string(4 * k) + "-" +
                             std::to_string(4 * k + 3));
  }
  // Columns: the 4 splits' ends (1024 keys in 4 splits) at least, every one a key end of an event.
  EXPECT_GE(o.column_keys.size(), size_t{4});
  EXPECT_EQ(o.column_keys.back(), config.seq_kv);
  expect_cells_are_their_events(run, report, o);

  // The first divergence: its pair's row, its key end's column, over the tolerance; a click there
  // selects it (it is the first failing event in the kernel's order of all).
  ASSERT_TRUE(report.first_divergence.found);
  ASSERT_TRUE(o.divergence.has_value());
  const EventHeader& d = report.first_divergence.header;
  EXPECT_EQ(o.divergence->row, o.row_of(d.batch, d.head));
  const int64_t key_end = event_key_end(d, run.stages[static_cast<size_t>(d.stage)], run.attention);
  EXPECT_EQ(o.column_keys[static_cast<size_t>(o.divergence->col)], key_end);
  EXPECT_GT(o.values.view().at(o.divergence->row, o.divergence->col), 1.0f);
  EXPECT_EQ(pair_overview_event(o, run, report, o.divergence->row, o.divergence->col),
            std::optional<size_t>(static_cast<size_t>(report.first_divergence.event_index)));
  // A click on any cell selects an event of that row's pair ending at that column's key.
  for (int64_t r = 0; r < o.values.rows; ++r)
    for (int64_t c = 0; c < o.values.cols; ++c) {
      if (o.values.view().masked(r, c)) continue;
      const auto e = pair_overview_event(o, run, report, r, c);
      ASSERT_TRUE(e.has_value());
      const EventHeader& h = run.headers[*e];
      EXPECT_EQ(std::pair(h.batch, h.head), o.pairs[static_cast<size_t>(r)]);
      EXPECT_EQ(o.cell_of(run, h), (GridCell{r, c}));
    }
  // Outside the grid: nothing.
  EXPECT_FALSE(pair_overview_event(o, run, report, -1, 0));
  EXPECT_FALSE(pair_overview_event(o, run, report, 0, o.values.cols));
}

// A few query rows per pair (still "few"): a cell is the worst over the pair's rows, and a click
// still lands on that pair's event at that key.
TEST(PairOverview, SeveralQueryRowsTakeTheWorstOfThem) {
  TS_SEEDED(seed);
  AttentionConfig config = test::splitk_decode_gqa(Fault::double_count_l);
  config.seq_q = 3;
  const LoadedRun loaded = test::capture_cpu(config, seed);
  ASSERT_TRUE(shows_pair_overview(*loaded.run));
  const PairOverview o = pair_overview(*loaded.run, *loaded.report);
  EXPECT_EQ(o.values.rows, 16);
  expect_cells_are_their_events(*loaded.run, *loaded.report, o);
}

TEST(PairOverview, ACleanRunIsWithinTolerance) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_decode_gqa(Fault::none), seed);
  const PairOverview o = pair_overview(*loaded.run, *loaded.report);
  EXPECT_FALSE(o.divergence.has_value());
  expect_cells_are_their_events(*loaded.run, *loaded.report, o);
  const FloatGridView v = o.values.view();
  for (int64_t r = 0; r < v.rows; ++r)
    for (int64_t c = 0; c < v.cols; ++c) {
      if (v.masked(r, c)) continue;
      EXPECT_LE(v.at(r, c), 1.0f);
    }
}

}  // namespace
}  // namespace ts
