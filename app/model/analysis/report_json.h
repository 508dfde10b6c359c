// The analysis as JSON: `tilescope diff --json` and an export's summary.json. Non-finite
// figures (an infinite error where NaN was met) are written as the strings "inf", "-inf" and
// "NaN", since JSON has no such numbers.
//
//   {"verdict": "divergence", "symptom": "...", "symptom_kind": "reduce_scaled_by_l",
//    "mechanism": {"id": "reduce_scaled_by_l", "claim": "...", "scope": "...", "evidence": [...],
//                  "numbers": {"wrong_rows": 320, ...}} | null,
//    "alternatives": [mechanisms that fit equally], "findings": [{"id", "text", "numbers"}],
//    "origin_stage": "splitk.reduce",
//    "failing_sets": {"splitk.reduce": {"batches": {"failing": [[1, 1]], "compared": [[0, 1]],
//                     "all": false, "text": "batch 1 only (of 0-1)"}, "heads": ..., "query_rows": ...,
//                     "splits": ..., "steps": ..., "key_ends": ..., "columns": ..., "text": "..."}},
//    "worst_cell": {"place": {...}, "query": 5, "quantity": "O/l", "column": 3, "trace": ...,
//                   "reference": ..., "abs_error": ..., "rel_error": ..., "allowed": ...,
//                   "error_over_allowed": ...},
//    "non_finite_rows": [{"place", "query", "nan", "pos_inf", "neg_inf", "holds_no_key_state",
//                         "reference_keys", ...}],
//    "first_divergence": {"stage": "splitk.reduce", "batch": 0, "head": 0, "query_tile": 0,
//                         "split": 0, "query_row": 0, "query_rows": [0, ...], ...},
//    "stages": {"splitk.partial": {"events": {...}, "o_norm": {"max_abs": ...}, "failing_sets": ...,
//                                  "worst_cell": ...}}, "tolerance": {"rule": "...", ...}, ...}
//
// An event's "step" (in a "place") and a failing set's "steps" count the event's number in its
// block's own order (tilescope/event.h), for every stage: the texts say "event 4 of its block",
// "events 1-3 of their blocks (of 0-3)" (event_identity.h: kEventOfItsBlock).
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
