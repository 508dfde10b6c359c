// The overview's grids on captured runs: every navigator cell stands for the event at its query
// tile and column and shows that event's verdict; a click on an error-grid cell selects the
// event the analysis blames there; the first divergence's cells are where the analysis says.
#include <gtest/gtest.h>

#include <cmath>

#include "app/model/viewer/event_grids.h"
#include "tests/gui/viewer_fixtures.h"
#include "tests/model/test_seed.h"

namespace ts {
namespace {

TEST(TileNavigator, EachCellIsItsEventWithItsVerdict) {
  TS_SEEDED(seed);
  for (const AttentionConfig& config :
       {testing::splitk_small(Fault::double_count_l), testing::fa1_small(Fault::per_tile_softmax)}) {
    SCOPED_TRACE(std::string(to_string(config.kernel)));
    const LoadedRun loaded = testing::capture_cpu(config, seed);
    const RunView& run = *loaded.run;
    const AnalysisReport& report = *loaded.report;
    for (const auto& [batch, head] : traced_pairs_of(run)) {
      const std::vector<TileGrid> grids = tile_navigator(run, report, batch, head);
      ASSERT_EQ(grids.size(), config.kernel == KernelKind::fa1 ? 2u : 3u) << "one per traced stage";
      size_t covered = 0, events_of_pair = 0;
      for (const EventHeader& h : run.headers) events_of_pair += h.batch == batch && h.head == head;
      for (const TileGrid& g : grids) {
        EXPECT_EQ(g.values.rows, run.tiling.num_q_tiles);
        const int64_t want_cols = g.stage == Stage::final_output ? 1
                                  : g.stage == Stage::fa1_step   ? run.tiling.num_kv_tiles
                                                                 : run.tiling.num_splits;
        EXPECT_EQ(g.values.cols, want_cols) << kStageNames[static_cast<int>(g.stage)];
        for (int64_t r = 0; r < g.values.rows; ++r)
          for (int64_t c = 0; c < g.values.cols; ++c) {
            const auto e = g.event_at(r, c);
            const size_t at = static_cast<size_t>(r * g.values.cols + c);
            if (!e) {
              EXPECT_TRUE(g.values.mask[at]) << "no event: masked";
              continue;
            }
            ++covered;
            const EventHeader& h = run.headers[*e];
            EXPECT_EQ(h.stage, static_cast<int32_t>(g.stage));
            EXPECT_EQ(h.batch, batch);
            EXPECT_EQ(h.head, head);
            EXPECT_EQ(h.q_tile, r);
            const int64_t col = g.stage == Stage::final_output ? 0 : g.stage == Stage::fa1_step ? h.step : h.split;
            EXPECT_EQ(col, c);
            EXPECT_FALSE(g.values.mask[at]);
            const EventResult& res = report.events[*e];
            if (res.nan > 0) EXPECT_TRUE(std::isnan(g.values.values[at]));
            else EXPECT_EQ(g.values.values[at], res.worst_ratio);
            EXPECT_EQ(g.cell_of(event_key(h)), (GridCell{r, c}));
          }
      }
      EXPECT_EQ(covered, events_of_pair) << "every event of the pair has its cell";
    }
  }
}

TEST(ErrorGridClicks, SelectTheEventTheAnalysisBlamesThere) {
  TS_SEEDED(seed);
  const LoadedRun loaded = testing::capture_cpu(testing::splitk_small(Fault::double_count_l), seed);
  const RunView& run = *loaded.run;
  const AnalysisReport& report = *loaded.report;
  const Tiling& t = run.tiling;
  for (int64_t query = 0; query < t.seq_q; query += 5)
    for (int64_t split = 0; split < t.num_splits; ++split) {
      // The overview (worst of partial and reduce): the reduce's step for this split fails
      // (double-counted sums), the partial does not, so the click lands on the reduce.
      const auto e = event_for_grid_cell(run, report, std::nullopt, 0, 1, query, split);
      ASSERT_TRUE(e.has_value());
      const EventHeader& h = run.headers[*e];
      EXPECT_EQ(h.head, 1);
      EXPECT_EQ(h.q_tile, query / t.block_m);
      EXPECT_EQ(h.split, split);
      EXPECT_EQ(report.events[*e].passes, false) << "query " << query << " split " << split;
      EXPECT_EQ(h.stage, static_cast<int32_t>(Stage::splitk_reduce));
      // A stage's own grid selects that stage's event.
      const auto p = event_for_grid_cell(run, report, Stage::splitk_partial, 0, 1, query, split);
      ASSERT_TRUE(p.has_value());
      EXPECT_EQ(run.headers[*p].stage, static_cast<int32_t>(Stage::splitk_partial));
      EXPECT_EQ(run.headers[*p].split, split);
    }
  EXPECT_FALSE(event_for_grid_cell(run, report, std::nullopt, 0, 0, t.seq_q, 0).has_value()) << "past the queries";
  EXPECT_FALSE(event_for_grid_cell(run, report, std::nullopt, 0, 0, 0, t.num_splits).has_value());
  EXPECT_FALSE(event_for_grid_cell(run, report, std::nullopt, 0, 7, 0, 0).has_value()) << "no such head";

  // A clean run: the earliest event there, the partial.
  const LoadedRun clean = testing::capture_cpu(testing::splitk_small(Fault::none), seed);
  const auto c = event_for_grid_cell(*clean.run, *clean.report, std::nullopt, 0, 0, 9, 2);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(clean.run->headers[*c].stage, static_cast<int32_t>(Stage::splitk_partial));
}

TEST(ErrorGridCells, OfTheFirstDivergenceAndOfEvents) {
  TS_SEEDED(seed);
  const LoadedRun loaded = testing::capture_cpu(testing::splitk_small(Fault::double_count_l), seed);
  const AnalysisReport& report = *loaded.report;
  const Tiling& t = loaded.run->tiling;
  const auto key = divergence_key(report);
  ASSERT_TRUE(key.has_value());
  const auto rect = grid_cells_of(*key, t, std::nullopt, key->batch, key->head, t.num_splits);
  ASSERT_TRUE(rect.has_value());
  // Independently: the divergent event's rows are its query tile's, its column its split.
  const EventHeader& h = loaded.run->headers[static_cast<size_t>(report.first_divergence.event_index)];
  EXPECT_EQ(rect->row0, int64_t{h.q_tile} * loaded.run->block_m);
  EXPECT_EQ(rect->row1, rect->row0 + h.rows);
  EXPECT_EQ(rect->col0, h.split);
  EXPECT_EQ(rect->col1, h.split + 1);
  for (int64_t q : report.first_divergence.query_rows) EXPECT_TRUE(rect->contains(q, h.split)) << q;
  EXPECT_FALSE(grid_cells_of(*key, t, std::nullopt, key->batch, key->head + 1, t.num_splits).has_value())
      << "another pair's grid";
  EXPECT_FALSE(grid_cells_of(*key, t, Stage::splitk_partial, key->batch, key->head, t.num_splits).has_value())
      << "another stage's grid";
  // The final output covers every column of the overview, one of its own grid.
  EventKey fin = *key;
  fin.stage = static_cast<int32_t>(Stage::final_output);
  fin.split = -1;
  fin.step = 0;
  const auto all = grid_cells_of(fin, t, std::nullopt, fin.batch, fin.head, t.num_splits);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->col0, 0);
  EXPECT_EQ(all->col1, t.num_splits);
  const auto own = grid_cells_of(fin, t, Stage::final_output, fin.batch, fin.head, 1);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->col1, 1);
}

}  // namespace
}  // namespace ts
