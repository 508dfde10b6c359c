// The analysis of one run: its phases (analysis_phases.h) in order.
#include "app/model/analysis/analyze_run.h"

#include "app/model/analysis/absent_cells.h"
#include "app/model/analysis/analysis_phases.h"
#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/symptoms.h"
#include "app/model/analysis/worst_cell.h"

namespace ts {

AnalysisReport analyze_run(const RunView& run, const AnalysisOptions& options) {
  RunReferenceOptions ro;
  ro.cache_bytes = options.reference_cache_bytes;
  ro.workers = options.workers;
  ro.tolerance = options.tolerance;
  ro.device = options.device;
  RunReference reference(run, ro);
  return analyze_run(run, reference, options.workers, options.progress);
}

AnalysisReport analyze_run(const RunView& run, RunReference& ref, unsigned workers, const AnalysisProgress& progress) {
  AnalysisReport rep = start_report(run);
  const ComparedEvents events = identify_events(run, rep);
  const std::vector<RowError> row_errors = compare_events(run, ref, events, workers, progress);
  rep.tolerance = ref.tolerance();
  judge_events(run, row_errors, rep);
  build_error_grids(run, row_errors, rep);
  collect_missing_events(run, rep);
  mark_absent_cells(rep);  // why each empty grid cell is empty: masked, never written, not traced
  find_first_divergence(run, ref, rep);
  measure_failing_sets(run, ref, row_errors, rep);
  find_worst_cells(run, ref, rep);
  rep.symptom = diagnose(rep, run, ref, workers);
  return rep;
}

}  // namespace ts
