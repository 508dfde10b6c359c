// Phase 2 of the analysis (analysis_phases.h): every compared event's rows against the
// reference of its row block, row blocks in parallel, with the naive baselines' errors when the
// tolerance is not known yet.
#include <atomic>

#include "app/model/analysis/analysis_phases.h"
#include "app/model/analysis/naive_baseline.h"

namespace ts {

std::vector<RowError> compare_events(const RunView& run, RunReference& ref, const ComparedEvents& ids, unsigned workers,
                                     const AnalysisProgress& progress) {
  const size_t rows_cap = static_cast<size_t>(run.max_rows);
  std::vector<RowError> row_errors(run.num_events() * rows_cap);
  const bool need_naive = !ref.has_tolerance();
  std::vector<NaiveErrors> naive(ids.blocks.size());
  const double scale = run.attention.effective_scale();
  const uint64_t total = ids.blocks.size();
  std::atomic<uint64_t> done{0};
  // A run of row blocks: the baselines' errors when the tolerance is not known yet (for the whole
  // run at once, kept with its first block), then every event of each block.
  const auto compare_run = [&](std::span<const size_t> bs, std::span<const RowBlockReference* const> blocks) {
    if (need_naive) naive[bs.front()] = ref.naive_errors(blocks);
    for (size_t k = 0; k < bs.size(); ++k) {
      for (size_t i : ids.by_block[bs[k]]) {
        const RefState want = ref.expected(run.headers[i], *blocks[k]);
        const RunEvent ev = run.event(i);
        const TraceState got{ev.header.convention, scale, ev.header.rows, run.head_dim, ev.m, ev.l, ev.o};
        compare_state(got, want,
                      std::span<RowError>(row_errors).subspan(i * rows_cap, static_cast<size_t>(ev.header.rows)));
      }
      if (progress) progress(done.fetch_add(1) + 1, total);
    }
  };
  ref.for_each_run(ids.blocks, workers, compare_run);
  if (need_naive) {
    NaiveErrors all;
    for (const NaiveErrors& e : naive) all = max_errors(all, e);
    ref.set_tolerance(rule_tolerance(all, run.attention.dtype, stage_forms(ref.stages())));
  }
  return row_errors;
}

}  // namespace ts
