// The analysis of one run: every event against the float64 reference for the same tiling, the
// verdicts under the correctness rule (or an explicit tolerance), the first divergence, missing
// events, error grids and a symptom line (analysis_report.h).
//
//   AnalysisReport report = analyze_run(run);                 // CLI: one call
//   RunReference ref(run);  report = analyze_run(run, ref);   // GUI: keeps ref for compare_event
//
// Work is done a query tile at a time on `workers` threads: the tile's reference, the naive
// baselines' errors on it, and its events' row errors; verdicts follow once the tolerance is
// known. Throws AnalysisError when the run cannot be analysed (inputs missing for a traced
// pair, inputs that do not fit the config, no events at all).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/run_view.h"

namespace ts {

// Row blocks compared of all (the bulk of an analysis: each one's reference, baselines and
// events); from worker threads.
using AnalysisProgress = std::function<void(uint64_t done, uint64_t total)>;

struct AnalysisOptions {
  std::optional<ToleranceOverride> tolerance;  // --tol; default: the correctness rule
  unsigned workers = 0;                        // 0: every core
  // Row block references kept for re-use. The analysis reads every row block in the comparison
  // and every failing one again in the diagnosis (local replay): a block no longer cached is
  // computed a second time, which was a quarter of the diff of a full S = 8192 Split-K trace at
  // 64 MiB (its 1024 blocks take 136 MiB). Only what is computed is kept, so small runs stay small.
  size_t reference_cache_bytes = size_t{256} << 20;
  ReferenceDevice device = ReferenceDevice::automatic;  // the GPU when one is present
  AnalysisProgress progress;
};

AnalysisReport analyze_run(const RunView& run, const AnalysisOptions& options = {});
// With a reference the caller keeps (its tolerance is computed here if not yet known).
AnalysisReport analyze_run(const RunView& run, RunReference& reference, unsigned workers = 0,
                           const AnalysisProgress& progress = {});

}  // namespace ts
