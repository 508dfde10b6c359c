// The symptom line: what the shape of the errors says about the bug, in words a kernel author
// can act on. Derived only from the errors (which stage, which tiles and splits, which rows,
// which quantities, NaN where the reference sees no key, missing events, what the error equals),
// never from the fault named in a trace's metadata: the analysis must work on a user's kernel.
//
// Kinds (Symptom::kind), checked in this order:
//   clean              every event within tolerance
//   missing_partial    a split wrote no partial and the reduce reads its unwritten state
//   missing_events     events the kernel never wrote (other cases)
//   nan_fully_masked   NaN exactly in rows that see no key in the event's kv tiles
//   query_layout       partials right; the reduce right for query 0, wrong from query 1 on
//   reduce_scaled_by_l partials right; the reduce's m and l right, its O = l x the reference
//   reduce_only        every partial matches; the reduce is wrong (other shapes)
//   final_only         every intermediate state matches; the final output is wrong
//   first_tile_only    right after the first kv tile, wrong after, m / l wrong (no rescaling)
//   stale_state        m and l right; O = reference + earlier tiles' P.V added again (never reset)
//   multi_tile_o       m and l right; O wrong once a second kv tile is used (leak or race)
//   o_only             m and l right; O wrong from the first kv tile (V misread: race?)
//   nan, inf           non-finite values where the reference is finite (other shapes)
//   wrong_values       anything else: where the first wrong values are, which quantities
// A race shows as errors that change between schedules; one run cannot show that, an A/B of two
// captures with different --perturb-seed can (ab_compare.h, kind "race").
#pragma once

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/run_view.h"

namespace ts {

Symptom diagnose(const AnalysisReport& report, const RunView& run, const RunReference& reference);

}  // namespace ts
