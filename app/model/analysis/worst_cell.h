// How much a run is wrong, as torch.testing.assert_close says it: the single cell (an m, LSE or
// l value of a row, or an O value of a row and column) furthest outside the tolerance, with its
// coordinates, the trace and reference values, the absolute and relative error, the error the
// tolerance allows there and the ratio of the two. Per stage and over the whole run.
//
// The allowed error is the tolerance's bar for the cell's row (tolerance.h): atol (for raw
// unnormalised O, atol x the row's l) + rtol x the row's largest |reference| of that quantity.
// It differs from assert_close's per-element |expected| on purpose: the error of a sum of
// products scales with the row's magnitude, not with each element's (docs/diagnosis.md).
#pragma once

#include <string>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/run_view.h"

namespace ts {

// Fills every failing StageReport's `worst_cell` (from its event with the largest ratio) and the
// report's (the largest over the stages).
void find_worst_cells(const RunView& run, const RunReference& reference, AnalysisReport& report);

// "O at batch 0 head 0 query 5 column 17 (my.step, keys 0-63): trace 0.412, reference 0.398,
// |error| 0.0139 (rel 0.0349), allowed 2.1e-06 = 2.1e-06 + 0 x 0.91: 6.6e+03 x the tolerance".
std::string describe_worst_cell(const WorstCell& cell, const AnalysisReport& report);

}  // namespace ts
