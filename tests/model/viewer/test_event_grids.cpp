// Which event is which cell (app/model/viewer/event_grids.h), on runs of our kernels and on a
// user's trace with a stage table of its own: every navigator cell stands for the events of its
// row block ending at its column's key and shows their verdict; a click on an error-grid cell
// selects the first failing event covering it in the kernel's order (else the first); an event's
// cells are its query rows (pooled when a grid row pools several queries) in the column of its key
// end. Expectations are written from the trace's own description (row blocks, split ends), not
// from the module's arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "app/model/viewer/event_grids.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

bool fails(const AnalysisReport& r, size_t e) { return r.events[e].compared && !r.events[e].passes; }

// Brute force: the events of a navigator cell, by the definition (stage, pair, row block, key end).
std::vector<size_t> navigator_cell_events(const RunView& run, const NavigatorGrid& g, int64_t row, int64_t col,
                                          const AnalysisReport& report) {
  std::vector<size_t> out;
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (!report.events[i].compared || h.stage != g.stage || h.batch != g.batch || h.head != g.head) continue;
    const RowBlock& b = g.row_blocks[static_cast<size_t>(row)];
    if (h.q_begin != b.q_begin || h.rows != b.rows) continue;
    if (event_key_end(h, run.stage_of(i), run.attention) != g.column_keys[static_cast<size_t>(col)]) continue;
    out.push_back(i);
  }
  return out;
}

// The first failing event in the kernel's order, else the first: written with kernel_order.
size_t expected_pick(const RunView& run, const AnalysisReport& report, const std::vector<size_t>& events) {
  const std::vector<size_t> order = kernel_order(run.headers, run.stages);
  std::optional<size_t> first;
  for (size_t e : order) {
    if (std::find(events.begin(), events.end(), e) == events.end()) continue;
    if (fails(report, e)) return e;
    if (!first) first = e;
  }
  return *first;
}

void expect_navigator_cells_are_their_events(const RunView& run, const AnalysisReport& report) {
  for (const auto& [batch, head] : traced_pairs_of(run)) {
    const std::vector<NavigatorGrid> grids = event_navigator(run, report, batch, head);
    std::set<int32_t> stages_of_pair;
    size_t events_of_pair = 0;
    for (size_t i = 0; i < run.num_events(); ++i)
      if (report.events[i].compared && run.headers[i].batch == batch && run.headers[i].head == head) {
        stages_of_pair.insert(run.headers[i].stage);
        ++events_of_pair;
      }
    ASSERT_EQ(grids.size(), stages_of_pair.size()) << "one grid per stage of the pair";
    size_t covered = 0;
    for (const NavigatorGrid& g : grids) {
      SCOPED_TRACE(run.stages[static_cast<size_t>(g.stage)].name);
      ASSERT_TRUE(g.omitted.empty());
      ASSERT_EQ(g.values.rows, static_cast<int64_t>(g.row_blocks.size()));
      ASSERT_EQ(g.values.cols, static_cast<int64_t>(g.column_keys.size()));
      for (int64_t r = 0; r < g.values.rows; ++r)
        for (int64_t c = 0; c < g.values.cols; ++c) {
          const size_t at = static_cast<size_t>(r * g.values.cols + c);
          const std::vector<size_t> there = navigator_cell_events(run, g, r, c, report);
          if (there.empty()) {
            EXPECT_TRUE(g.values.mask[at]) << "no event: masked";
            EXPECT_FALSE(g.event_at(r, c).has_value());
            continue;
          }
          covered += there.size();
          EXPECT_FALSE(g.values.mask[at]);
          ASSERT_TRUE(g.event_at(r, c).has_value());
          EXPECT_EQ(*g.event_at(r, c), expected_pick(run, report, there));
          float worst = 0;
          bool nan = false;
          for (size_t e : there) {
            worst = std::max(worst, report.events[e].worst_ratio);
            nan |= report.events[e].nan > 0;
          }
          if (nan) EXPECT_TRUE(std::isnan(g.values.values[at]));
          else EXPECT_EQ(g.values.values[at], worst);
          for (size_t e : there) {
            const EventHeader& h = run.headers[e];
            EXPECT_EQ(g.cell_of(h, event_key_end(h, run.stage_of(e), run.attention)), (GridCell{r, c}));
          }
        }
    }
    EXPECT_EQ(covered, events_of_pair) << "every compared event of the pair has its cell";
  }
}

TEST(EventNavigator, EachCellIsItsEventsWithTheirVerdict) {
  TS_SEEDED(seed);
  for (const AttentionConfig& config :
       {test::splitk_small(Fault::double_count_l), test::fa1_small(Fault::per_tile_softmax)}) {
    SCOPED_TRACE(std::string(to_string(config.kernel)));
    const LoadedRun loaded = test::capture_cpu(config, seed);
    expect_navigator_cells_are_their_events(*loaded.run, *loaded.report);
    // Rows are the kernel's query tiles, columns its kv tiles' (or splits') ends.
    const Tiling& t = *loaded.run->tiling;
    for (const NavigatorGrid& g : event_navigator(*loaded.run, *loaded.report, 0, 0)) {
      EXPECT_EQ(static_cast<int32_t>(g.row_blocks.size()), t.num_q_tiles);
      for (size_t r = 0; r < g.row_blocks.size(); ++r) EXPECT_EQ(g.row_blocks[r].q_begin, int64_t{t.block_m} * r);
    }
  }
}

TEST(EventNavigator, AUsersStagesRowBlocksAndKeyRanges) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const test::UserStageTrace user = test::write_user_stage_trace(dir.path() / "user.trace.safetensors", seed);
  JobProgress progress;
  const LoadedRun loaded = load_run_file(user.path, progress);
  const RunView& run = *loaded.run;
  expect_navigator_cells_are_their_events(run, *loaded.report);
  const std::vector<NavigatorGrid> grids = event_navigator(run, *loaded.report, 0, 1);
  ASSERT_EQ(grids.size(), 3u);
  const std::vector<RowBlock> blocks = {{0, 1, 0, 16}, {0, 1, 16, 16}, {0, 1, 32, 8}};
  for (const NavigatorGrid& g : grids) EXPECT_EQ(g.row_blocks, blocks);
  EXPECT_EQ(grids[0].column_keys, (std::vector<int64_t>{70, 200, 300})) << "my_partial: split ends";
  EXPECT_EQ(grids[1].column_keys, (std::vector<int64_t>{70, 200, 300})) << "merge: after each split";
  EXPECT_EQ(grids[2].column_keys, (std::vector<int64_t>{300})) << "epilogue: every key";
  EXPECT_EQ(grids[1].event_at(1, 1), user.wrong_merge) << "the merge after split 1 of queries 16-31";
  EXPECT_GT(grids[1].values.values[1 * 3 + 1], 1.0f) << "drawn as failing";
  EXPECT_LE(grids[0].values.values[1 * 3 + 1], 1.0f) << "its partial passes";
}

// The overview of (batch 0, head h) of the user's trace.
const ErrorGrid& overview_of(const AnalysisReport& r, int32_t head) {
  for (const ErrorGrid& g : r.overview)
    if (g.batch == 0 && g.head == head) return g;
  throw std::logic_error("no overview");
}

TEST(ErrorGridCells, NonUniformKeyRangesOfAUsersTrace) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const test::UserStageTrace user = test::write_user_stage_trace(dir.path() / "user.trace.safetensors", seed);
  JobProgress progress;
  const LoadedRun loaded = load_run_file(user.path, progress);
  const RunView& run = *loaded.run;
  const AnalysisReport& report = *loaded.report;
  ASSERT_TRUE(report.first_divergence.found);
  ASSERT_EQ(report.first_divergence.event_index, static_cast<int64_t>(user.wrong_merge));

  for (int32_t head : {0, 1}) {
    const ErrorGrid& o = overview_of(report, head);
    ASSERT_EQ(o.column_keys, (std::vector<int64_t>{70, 200, 300}));
    ASSERT_EQ(o.rows_per_cell, 1);
    for (int64_t query = 0; query < 40; ++query)
      for (int64_t col = 0; col < 3; ++col) {
        SCOPED_TRACE("head " + std::to_string(head) + " query " + std::to_string(query) + " col " + std::to_string(col));
        const int32_t q_begin = query < 16 ? 0 : query < 32 ? 16 : 32;
        const int32_t split = static_cast<int32_t>(col);
        // Partial and merge both end at this split's end; the merge is wrong only at head 1,
        // queries 16-31, split 1; elsewhere the partial comes first in the kernel's order.
        const bool wrong = head == 1 && q_begin == 16 && split == 1;
        const size_t want = user.index_of(wrong ? test::kUserMerge : test::kUserPartial, head, q_begin, split);
        EXPECT_EQ(event_for_grid_cell(run, report, o, query, col), want);
        const std::vector<size_t> there = events_at_grid_cell(run, report, o, query, col);
        EXPECT_EQ(there, (std::vector<size_t>{user.index_of(test::kUserPartial, head, q_begin, split),
                                              user.index_of(test::kUserMerge, head, q_begin, split)}))
            << "the partial (pass 0) before the merge (pass 1)";
      }
    EXPECT_FALSE(event_for_grid_cell(run, report, o, 40, 0).has_value()) << "past the queries";
    EXPECT_FALSE(event_for_grid_cell(run, report, o, 0, 3).has_value()) << "past the columns";
  }
  // A stage's own grid selects that stage's event; the epilogue's grid has one column, all keys.
  const ErrorGrid* merge = report.grid(test::kUserMerge, 0, 1);
  ASSERT_NE(merge, nullptr);
  EXPECT_EQ(event_for_grid_cell(run, report, *merge, 20, 0), user.index_of(test::kUserMerge, 1, 16, 0));
  const ErrorGrid* epilogue = report.grid(test::kUserEpilogue, 0, 1);
  ASSERT_NE(epilogue, nullptr);
  EXPECT_EQ(epilogue->column_keys, (std::vector<int64_t>{300}));
  EXPECT_EQ(event_for_grid_cell(run, report, *epilogue, 39, 0), user.index_of(test::kUserEpilogue, 1, 32, -1));

  // The cells of events: the wrong merge's rows 16-31 in the column ending at key 200.
  const ErrorGrid& o1 = overview_of(report, 1);
  const EventHeader& wrong = run.headers[user.wrong_merge];
  EXPECT_EQ(grid_cells_of(o1, wrong, run.stages, run.attention), (CellRect{16, 32, 1, 2}));
  EXPECT_EQ(grid_cells_of(*merge, wrong, run.stages, run.attention), (CellRect{16, 32, 1, 2}));
  EXPECT_FALSE(grid_cells_of(overview_of(report, 0), wrong, run.stages, run.attention).has_value()) << "another head";
  EXPECT_FALSE(grid_cells_of(*epilogue, wrong, run.stages, run.attention).has_value()) << "another stage's grid";
  // A final-kind event covers every column of the overview (no final stage of its own there).
  const EventHeader& last = run.headers[user.index_of(test::kUserEpilogue, 1, 32, -1)];
  EXPECT_EQ(grid_cells_of(o1, last, run.stages, run.attention), (CellRect{32, 40, 0, 3}));
  EXPECT_EQ(grid_cells_of(*epilogue, last, run.stages, run.attention), (CellRect{32, 40, 0, 1}));
  for (int64_t q : report.first_divergence.query_rows) EXPECT_TRUE((CellRect{16, 32, 1, 2}.contains(q, 1))) << q;

  // Axis words: key positions by their last key; one column of every key says so.
  const ColumnAxis axis = key_column_axis(o1.column_keys, run.attention.seq_kv);
  EXPECT_EQ(axis.label, "keys up to");
  EXPECT_EQ(axis.values, (std::vector<int64_t>{69, 199, 299}));
  EXPECT_EQ(key_column_axis(epilogue->column_keys, 300).label, "all keys");
  EXPECT_TRUE(key_column_axis(epilogue->column_keys, 300).values.empty());
  EXPECT_EQ(key_column_axis(std::vector<int64_t>{4096}, 8192).label, "keys up to 4095");
}

// A grid whose rows pool `per` queries: the analysis pools only past 2^26 cells, so the user's
// overview is re-pooled here (values do not matter to the layout).
ErrorGrid pooled(const ErrorGrid& g, int64_t per, int64_t seq_q) {
  ErrorGrid p = g;
  p.rows_per_cell = per;
  p.grid.rows = (seq_q + per - 1) / per;
  p.grid.values.assign(static_cast<size_t>(p.grid.rows * p.grid.cols), 0.5f);
  p.grid.mask.assign(p.grid.values.size(), 0);
  return p;
}

TEST(ErrorGridCells, PooledRowsCoverEveryRowBlockTheyTouch) {
  TS_SEEDED(seed);
  test::TempDir dir;
  const test::UserStageTrace user = test::write_user_stage_trace(dir.path() / "user.trace.safetensors", seed);
  JobProgress progress;
  const LoadedRun loaded = load_run_file(user.path, progress);
  const RunView& run = *loaded.run;
  const AnalysisReport& report = *loaded.report;
  const EventHeader& wrong = run.headers[user.wrong_merge];  // queries 16-31, keys up to 199

  // 12 queries a row: row 0 = 0-11, row 1 = 12-23 (row blocks 0-15 and 16-31), row 2 = 24-35
  // (16-31 and 32-39), row 3 = 36-39.
  const ErrorGrid p12 = pooled(overview_of(report, 1), 12, 40);
  ASSERT_EQ(p12.grid.rows, 4);
  EXPECT_EQ(grid_cells_of(p12, wrong, run.stages, run.attention), (CellRect{1, 3, 1, 2}));
  const auto partial = [&](int32_t head, int32_t q_begin, int32_t split) {
    return user.index_of(test::kUserPartial, head, q_begin, split);
  };
  const auto merge = [&](int32_t head, int32_t q_begin, int32_t split) {
    return user.index_of(test::kUserMerge, head, q_begin, split);
  };
  // Row 1, column 1: the partials and merges of both row blocks it touches, in the kernel's
  // order (pass, then block: row block 0's partial is block 10, row block 1's block 13).
  EXPECT_EQ(events_at_grid_cell(run, report, p12, 1, 1),
            (std::vector<size_t>{partial(1, 0, 1), partial(1, 16, 1), merge(1, 0, 1), merge(1, 16, 1)}));
  EXPECT_EQ(event_for_grid_cell(run, report, p12, 1, 1), user.wrong_merge) << "the failing one";
  EXPECT_EQ(event_for_grid_cell(run, report, p12, 1, 0), partial(1, 0, 0)) << "none failing: the first";
  EXPECT_EQ(events_at_grid_cell(run, report, p12, 3, 2), (std::vector<size_t>{partial(1, 32, 2), merge(1, 32, 2)}));
  // Head 0 has no failing event: the first in the kernel's order, row block 0's partial.
  const ErrorGrid q12 = pooled(overview_of(report, 0), 12, 40);
  EXPECT_EQ(event_for_grid_cell(run, report, q12, 1, 1), partial(0, 0, 1));

  // 8 queries a row: the wrong merge's rows 16-31 are rows 2 and 3; the 8-row block 32-39 is row 4.
  const ErrorGrid p8 = pooled(overview_of(report, 1), 8, 40);
  EXPECT_EQ(grid_cells_of(p8, wrong, run.stages, run.attention), (CellRect{2, 4, 1, 2}));
  EXPECT_EQ(grid_cells_of(p8, run.headers[merge(1, 32, 0)], run.stages, run.attention), (CellRect{4, 5, 0, 1}));
  EXPECT_EQ(event_for_grid_cell(run, report, p8, 3, 1), user.wrong_merge);
  EXPECT_EQ(event_for_grid_cell(run, report, p8, 4, 1), partial(1, 32, 1));
  EXPECT_EQ(query_axis_label(8), "query index (worst of 8 per row)");
  EXPECT_EQ(query_axis_label(1), "query index");
  EXPECT_EQ(grid_rows_of(16, 16, 12), (std::pair<int64_t, int64_t>{1, 3}));
  EXPECT_EQ(grid_rows_of(32, 8, 8), (std::pair<int64_t, int64_t>{4, 5}));
}

TEST(ErrorGridClicks, SplitKSelectTheEventTheAnalysisBlamesThere) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_small(Fault::double_count_l), seed);
  const RunView& run = *loaded.run;
  const AnalysisReport& report = *loaded.report;
  const Tiling& t = *run.tiling;
  const int32_t tile = run.stage_index("splitk.tile"), partial = run.stage_index("splitk.partial"),
                reduce = run.stage_index("splitk.reduce");
  ASSERT_GE(tile, 0) << "small enough for the per-tile events";
  const ErrorGrid* o = nullptr;
  for (const ErrorGrid& g : report.overview)
    if (g.batch == 0 && g.head == 1) o = &g;
  ASSERT_NE(o, nullptr);
  // One kv tile per split: the overview's columns are the splits' ends.
  ASSERT_EQ(t.kv_tiles_per_split, 1);
  ASSERT_EQ(o->column_keys.size(), static_cast<size_t>(t.num_splits));
  for (int32_t split = 0; split < t.num_splits; ++split)
    EXPECT_EQ(o->column_keys[static_cast<size_t>(split)], std::min<int64_t>((split + 1) * t.block_n, t.seq_kv));
  for (int64_t query = 0; query < t.seq_q; query += 5)
    for (int32_t split = 0; split < t.num_splits; ++split) {
      // The overview (worst of tile, partial and reduce): the reduce's step for this split fails
      // (double-counted sums), the states do not, so the click lands on the reduce.
      const auto e = event_for_grid_cell(run, report, *o, query, split);
      ASSERT_TRUE(e.has_value());
      const EventHeader& h = run.headers[*e];
      EXPECT_EQ(h.head, 1);
      EXPECT_EQ(h.q_begin, query / t.block_m * t.block_m);
      EXPECT_EQ(h.split, split);
      EXPECT_FALSE(report.events[*e].passes) << "query " << query << " split " << split;
      EXPECT_EQ(h.stage, reduce);
      // A stage's own grid selects that stage's event.
      const ErrorGrid* pg = report.grid(partial, 0, 1);
      ASSERT_NE(pg, nullptr);
      const auto p = event_for_grid_cell(run, report, *pg, query, split);
      ASSERT_TRUE(p.has_value());
      EXPECT_EQ(run.headers[*p].stage, partial);
      EXPECT_EQ(run.headers[*p].split, split);
    }
  EXPECT_FALSE(event_for_grid_cell(run, report, *o, t.seq_q, 0).has_value()) << "past the queries";
  EXPECT_FALSE(event_for_grid_cell(run, report, *o, 0, t.num_splits).has_value());

  // A clean run: the earliest event there, the split's state after its first kv tile.
  const LoadedRun clean = test::capture_cpu(test::splitk_small(Fault::none), seed);
  for (const ErrorGrid& g : clean.report->overview) {
    const auto c = event_for_grid_cell(*clean.run, *clean.report, g, 9, 2);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(clean.run->headers[*c].stage, tile);
    EXPECT_EQ(clean.run->headers[*c].split, 2);
    EXPECT_EQ(clean.run->headers[*c].step, 0);
  }
}

TEST(ErrorGridCells, OfTheFirstDivergenceOfAFa1Run) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::fa1_small(Fault::per_tile_softmax), seed);
  const RunView& run = *loaded.run;
  const AnalysisReport& report = *loaded.report;
  const Tiling& t = *run.tiling;
  const auto d = divergence_header(report);
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(run.stages[static_cast<size_t>(d->stage)].name, "fa1.step");
  const ErrorGrid* o = nullptr;
  for (const ErrorGrid& g : report.overview)
    if (g.batch == d->batch && g.head == d->head) o = &g;
  ASSERT_NE(o, nullptr);
  // FA-1's overview columns are its kv tiles' ends; the divergent step's column is its kv tile.
  ASSERT_EQ(o->column_keys.size(), static_cast<size_t>(t.num_kv_tiles));
  const auto rect = grid_cells_of(*o, *d, run.stages, run.attention);
  ASSERT_TRUE(rect.has_value());
  EXPECT_EQ(rect->row0, d->q_begin);
  EXPECT_EQ(rect->row1, d->q_begin + d->rows);
  EXPECT_EQ(rect->col0, d->step) << "step k ends at kv tile k's end";
  EXPECT_EQ(rect->col1, d->step + 1);
  for (int64_t q : report.first_divergence.query_rows) EXPECT_TRUE(rect->contains(q, d->step)) << q;
  EXPECT_EQ(event_for_grid_cell(run, report, *o, d->q_begin, d->step), report.first_divergence.event_index);
}

}  // namespace
}  // namespace ts
