// The analysis as JSON: `tilescope diff --json` and an export's summary.json. Non-finite
// figures (an infinite error where NaN was met) are written as the strings "inf", "-inf" and
// "NaN", since JSON has no such numbers.
//
//   {"verdict": "divergence", "symptom": "...", "symptom_kind": "reduce_scaled_by_l",
//    "first_divergence": {"stage": "splitk.reduce", "batch": 0, "head": 0, "query_tile": 0,
//                         "split": 0, "query_row": 0, "query_rows": [0, ...], ...},
//    "stages": {"splitk.partial": {"events": {...}, "o_norm": {"max_abs": ...}, ...}}, ...}
#pragma once

#include <nlohmann/json.hpp>

#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/analysis_report.h"

namespace ts {

nlohmann::json report_json(const AnalysisReport& report);
nlohmann::json ab_report_json(const ABReport& report);

// A figure as JSON: a number, or "inf" / "-inf" / "NaN".
nlohmann::json json_figure(double value);

}  // namespace ts
