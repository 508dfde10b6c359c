// Why an empty grid cell is empty (app/model/analysis/absent_cells.h), on a Split-K capture drawn
// from the test's seed with one event taken out of it as if the kernel had never written it (it
// moves to the run's planned-but-missing events): its cells on the analysis's grid and on the
// event navigator are "never written", the first divergence is that event, and no other cell
// changes kind.
#include <gtest/gtest.h>

#include <algorithm>

#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/viewer/event_grids.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(AbsentCells, AnEventTheKernelNeverWroteIsNeverWrittenEverywhere) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_small(Fault::none), seed);
  RunView run = *loaded.run;
  const AnalysisReport before = analyze_run(run);
  ASSERT_TRUE(before.clean());
  // The last recorded event: taking it out keeps every other event's payload where it is.
  ASSERT_GT(run.recorded_events, 0u);
  const size_t k = run.recorded_events - 1;
  const EventHeader gone = run.headers[k];
  run.headers.erase(run.headers.begin() + static_cast<std::ptrdiff_t>(k));
  --run.recorded_events;
  run.missing.push_back(gone);

  const AnalysisReport after = analyze_run(run);
  ASSERT_EQ(after.missing.size(), 1u);
  EXPECT_TRUE(after.first_divergence.found);
  EXPECT_TRUE(after.first_divergence.missing);
  const ErrorGrid* g = after.grid(gone.stage, gone.batch, gone.head);
  ASSERT_NE(g, nullptr);
  const StageInfo& stage = run.stages[static_cast<size_t>(gone.stage)];
  const int64_t col = g->column_of(event_key_end(gone, stage, run.attention));
  ASSERT_GE(col, 0);
  const int64_t per = std::max<int64_t>(1, g->rows_per_cell);
  size_t never = 0;
  for (int64_t r = 0; r < g->grid.rows; ++r)
    for (int64_t c = 0; c < g->grid.cols; ++c) {
      const uint8_t m = g->grid.view().absent(r, c);
      const bool its_cell = c == col && r * per < gone.q_begin + gone.rows && (r + 1) * per > gone.q_begin;
      if (its_cell) {
        EXPECT_EQ(m, static_cast<uint8_t>(AbsentCell::never_written)) << "row " << r;
        never += m == static_cast<uint8_t>(AbsentCell::never_written);
      } else {
        EXPECT_NE(m, static_cast<uint8_t>(AbsentCell::never_written)) << "row " << r << " col " << c;
      }
    }
  EXPECT_GT(never, 0u);
  // Cells the clean run had values in are unchanged in kind elsewhere (nothing else is absent).
  const ErrorGrid* b = before.grid(gone.stage, gone.batch, gone.head);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->grid.rows, g->grid.rows);
  ASSERT_EQ(b->grid.cols, g->grid.cols);
  for (int64_t r = 0; r < g->grid.rows; ++r)
    for (int64_t c = 0; c < g->grid.cols; ++c)
      if (g->grid.view().absent(r, c) != static_cast<uint8_t>(AbsentCell::never_written)) {
        EXPECT_EQ(g->grid.view().absent(r, c), b->grid.view().absent(r, c)) << "row " << r << " col " << c;
      }

  // The navigator: a cell of its own for the missing event, never written, selecting nothing.
  const std::vector<NavigatorGrid> nav = event_navigator(run, after, gone.batch, gone.head);
  const auto it = std::find_if(nav.begin(), nav.end(), [&](const NavigatorGrid& n) { return n.stage == gone.stage; });
  ASSERT_NE(it, nav.end());
  size_t nav_never = 0;
  for (size_t i = 0; i < it->values.mask.size(); ++i)
    if (it->values.mask[i] == static_cast<uint8_t>(AbsentCell::never_written)) {
      ++nav_never;
      EXPECT_EQ(it->events[i], -1);
    }
  EXPECT_EQ(nav_never, 1u);
}

}  // namespace
}  // namespace ts
