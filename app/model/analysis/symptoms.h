// The diagnosis: what the errors say about the bug, in words a kernel author can act on, and
// never more than they establish. Derived only from the errors (never from the fault named in a
// trace's metadata: the analysis must work on a user's kernel).
//
//   1. Local replay (local_replay.h) finds the stage whose events go wrong by themselves first —
//      the origin — and the stages that are wrong only through what they read from it.
//   2. Mechanisms (mechanisms.h) are tested on the origin's events; one is named only when it
//      reproduces every row that goes wrong there and breaks no right row. Several that fit
//      equally are listed as competing. Missing events and NaN where a row sees no key are
//      mechanisms too.
//   3. Whatever is named or not, what was measured is said (error_shape.h: which quantities,
//      constant ratios and what they equal, per-row factors, rows whose running max rose, rows
//      at a mask boundary, the tail, non-finite rows), with where the origin goes wrong as sets.
//
// Symptom::kind is a SymptomKind's stable id (symptom_kinds.h): a mechanism's when one is
// established, else clean, missing_partial, missing_events, competing, unexplained or non_finite.
// The line: the mechanism's claim and what it rests on, or what was measured and where.
#pragma once

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/run_view.h"

namespace ts {

// `workers`: threads for the one pass over every failing event (0: every core).
Symptom diagnose(const AnalysisReport& report, const RunView& run, const RunReference& reference, unsigned workers = 0);

}  // namespace ts
