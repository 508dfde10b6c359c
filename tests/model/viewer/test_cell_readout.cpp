// The picked cell's numbers (app/model/viewer/cell_readout.h) on a failing Split-K capture drawn
// from the test's seed: the values are the comparison's, the errors are |trace - reference| and
// its ratio to the reference, and a cell is over its bar exactly where compare_event marks it
// failing; the worst cell has the largest ratio of the event; the text names every number.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "app/model/analysis/run_reference.h"
#include "app/model/viewer/cell_readout.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(CellReadout, NumbersAreTheComparisonsAndTheBarIsCompareEventsBar) {
  TS_SEEDED(seed);
  const LoadedRun loaded = test::capture_cpu(test::splitk_small(Fault::double_count_l), seed);
  const RunView& run = *loaded.run;
  const AnalysisReport& report = *loaded.report;
  ASSERT_TRUE(report.first_divergence.found);
  RunReference ref(run);
  ref.set_tolerance(report.tolerance);
  std::mt19937_64 rng(seed);
  size_t checked = 0, over = 0;
  // The first divergence and a few random events.
  std::vector<size_t> events = {static_cast<size_t>(report.first_divergence.event_index)};
  std::uniform_int_distribution<size_t> any(0, run.recorded_events - 1);
  for (int i = 0; i < 4; ++i) events.push_back(any(rng));
  for (size_t e : events) {
    if (!report.events[e].compared) continue;
    const EventComparison cmp = compare_event(run, ref, e);
    for (int64_t row = 0; row < cmp.rows; ++row)
      for (int32_t c = 0; c < cmp.head_dim; ++c) {
        const auto norm = read_cell(cmp, report.tolerance, row, c, true, e);
        const auto raw = read_cell(cmp, report.tolerance, row, c, false, e);
        ASSERT_TRUE(norm && raw);
        const size_t at = static_cast<size_t>(row * cmp.head_dim + c);
        EXPECT_EQ(norm->trace, cmp.o_norm_trace.values[at]);
        EXPECT_EQ(norm->reference, cmp.o_norm_reference.values[at]);
        EXPECT_EQ(raw->trace, cmp.o_trace.values[at]);
        EXPECT_EQ(norm->query, cmp.header.q_begin + row);
        EXPECT_EQ(norm->batch, cmp.header.batch);
        EXPECT_EQ(norm->head, cmp.header.head);
        if (std::isfinite(norm->trace) && std::isfinite(norm->reference)) {
          EXPECT_DOUBLE_EQ(norm->abs_error, std::fabs(norm->trace - norm->reference));
          if (norm->reference != 0) {
            EXPECT_DOUBLE_EQ(norm->rel_error, norm->abs_error / std::fabs(norm->reference));
          }
        }
        // Over the bar in either quantity (or NaN) is what compare_event calls a failing cell.
        const bool fails = norm->ratio > 1 || raw->ratio > 1 || std::isnan(cmp.o_trace.values[at]);
        EXPECT_EQ(fails, cmp.cell_fails[at] != 0) << "event " << e << " row " << row << " col " << c;
        EXPECT_EQ(norm->fails, cmp.cell_fails[at] != 0);
        over += fails;
        ++checked;
      }
    // The worst cell has the largest ratio.
    const auto w = worst_cell_of(cmp, report.tolerance, true);
    ASSERT_TRUE(w);
    const double worst = read_cell(cmp, report.tolerance, w->first, w->second, true, e)->ratio;
    for (int64_t row = 0; row < cmp.rows; ++row)
      for (int32_t c = 0; c < cmp.head_dim; ++c)
        EXPECT_LE(read_cell(cmp, report.tolerance, row, c, true, e)->ratio, worst);
    EXPECT_FALSE(read_cell(cmp, report.tolerance, cmp.rows, 0, true, e));
    EXPECT_FALSE(read_cell(cmp, report.tolerance, 0, cmp.head_dim, true, e));
  }
  EXPECT_GT(checked, 0u);
  EXPECT_GT(over, 0u) << "the first divergence has cells over the tolerance";

  const EventComparison first = compare_event(run, ref, static_cast<size_t>(report.first_divergence.event_index));
  const auto r = read_cell(first, report.tolerance, 0, 3, true, first.event_index);
  const std::string text = to_text(*r);
  for (const char* word : {"batch: ", "head: ", "query row: ", "column: 3", "keys: ", "O/l trace: ", "O/l reference: ",
                           "abs error: ", "rel error: ", "allowed: ", "error / tolerance: "})
    EXPECT_NE(text.find(word), std::string::npos) << word << " in\n" << text;
  // The event's step, said as the titles say it (was "step: N", which read as a kv step).
  EXPECT_NE(text.find("\nplace: event " + std::to_string(first.header.step) + " of its block\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("step"), std::string::npos) << text;
}

}  // namespace
}  // namespace ts
