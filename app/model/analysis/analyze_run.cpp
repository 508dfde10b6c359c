// The analysis of one run: its phases (analysis_phases.h) in order.
#include "app/model/analysis/analyze_run.h"

#include "app/model/analysis/absent_cells.h"
#include "app/model/analysis/analysis_phases.h"
#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/symptoms.h"
#include "app/model/analysis/worst_cell.h"
#include "base/dtype.h"

namespace ts {

namespace {

// A kernel that rounds the softmax weights P to fp16 or bf16 before P V (an mma on 16-bit
// operands: a tensor-core kernel, Triton's tl.dot(p.to(v.dtype), v)) and does not declare its
// stage p_rounded is held to the float32 textbook, which its O misses by P's rounding: m and l
// right, O wrong, in every event, and no mechanism fits. When the origin looks so, the run is
// analysed again with that stage declared p_rounded; if the stage then passes, the report says so
// and says what to declare, in place of the race measurement it would suggest. Nothing is named
// as the cause: the rounding may be the kernel's intent or not, which the trace cannot tell.
void check_undeclared_p_rounding(const RunView& run, unsigned workers, AnalysisReport& rep) {
  const int32_t origin = rep.symptom.origin_stage;
  if (rep.verdict != Verdict::divergence || origin < 0 || rep.symptom.mechanism || !rep.symptom.alternatives.empty() ||
      !rep.tolerance.from_rule || run.attention.dtype == DType::f32)
    return;
  const StageInfo& info = run.stages[static_cast<size_t>(origin)];
  const StageReport& sr = rep.stages[static_cast<size_t>(origin)];
  if (info.kind == StageKind::final || info.p_rounded || sr.m.failing_rows > 0 || sr.l.failing_rows > 0 ||
      sr.o_norm.failing_rows + sr.o_raw.failing_rows == 0)
    return;
  RunView declared = run;
  declared.stages[static_cast<size_t>(origin)].p_rounded = true;
  AnalysisOptions options;
  options.workers = workers;
  const AnalysisReport again = analyze_run(declared, options);
  if (!again.stages[static_cast<size_t>(origin)].clean()) return;
  const std::string dtype(to_string(run.attention.dtype));
  Finding f;
  f.id = "p_rounded_fits";
  f.numbers = {{"run_clean", again.verdict == Verdict::clean ? 1.0 : 0.0}};
  f.text = "compared as a stage that rounds P to " + dtype + " before P V (p_rounded), every event of " + info.name +
           " passes" + (again.verdict == Verdict::clean ? " and the run is clean" : "");
  rep.symptom.findings.push_back(f);
  rep.symptom.details.push_back("measured: " + f.text);
  rep.symptom.line += "; " + f.text + ": if the kernel rounds P (an mma on 16-bit operands, tl.dot(p.to(v.dtype), v)), "
                      "declare " + info.name + " p_rounded";
  const std::string old_next = "next measurement: " + rep.symptom.next_measurement;
  rep.symptom.next_measurement =
      "if the kernel rounds P to " + dtype + " before P V, declare " + info.name +
      " p_rounded in the stage table (tilescope::Stage::p_rounded; in Python (name, kind, pass, True)); else find "
      "where its O loses precision";
  for (std::string& d : rep.symptom.details)
    if (d == old_next) d = "next measurement: " + rep.symptom.next_measurement;
}

}  // namespace

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
  check_undeclared_p_rounding(run, workers, rep);
  return rep;
}

}  // namespace ts
