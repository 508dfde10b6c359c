// Phase 2 of the analysis (analysis_phases.h): every compared event's rows against the
// reference of its row block, row blocks in parallel, with the naive baselines' errors when the
// tolerance is not known yet.
#include <atomic>
#include <future>
#include <memory>
#include <utility>

#include "app/model/analysis/analysis_phases.h"
#include "app/model/analysis/naive_baseline.h"
#include "app/model/analysis/parallel_for.h"

namespace ts {
namespace {

// Row blocks the GPU computes at a time: their references (pieces and prefixes) within this
// many bytes, so that a run of large row blocks does not hold them all at once, and so that the
// CPU compares one batch while the GPU computes the next.
constexpr size_t kGpuBatchBytes = size_t{64} << 20;

}  // namespace

std::vector<RowError> compare_events(const RunView& run, RunReference& ref, const ComparedEvents& ids, unsigned workers,
                                     const AnalysisProgress& progress) {
  const size_t rows_cap = static_cast<size_t>(run.max_rows);
  std::vector<RowError> row_errors(run.num_events() * rows_cap);
  const bool need_naive = !ref.has_tolerance();
  std::vector<NaiveErrors> naive(ids.blocks.size());
  const double scale = run.attention.effective_scale();
  const uint64_t total = ids.blocks.size();
  std::atomic<uint64_t> done{0};
  // One row block: the baselines' errors when the tolerance is not known yet, then every event.
  const auto compare_block = [&](size_t b, const RowBlockReference* block) {
    if (need_naive) naive[b] = ref.naive_errors(*block);
    for (size_t i : ids.by_block[b]) {
      const RefState want = ref.expected(run.headers[i], *block);
      const RunEvent ev = run.event(i);
      const TraceState got{ev.header.convention, scale, ev.header.rows, run.head_dim, ev.m, ev.l, ev.o};
      compare_state(got, want,
                    std::span<RowError>(row_errors).subspan(i * rows_cap, static_cast<size_t>(ev.header.rows)));
    }
    if (progress) progress(done.fetch_add(1) + 1, total);
  };
  if (ref.on_gpu()) {
    // Batches of row blocks computed together on the device (the next one while the CPU's
    // threads compare this one).
    std::vector<std::pair<size_t, size_t>> batches;
    for (size_t first = 0; first < ids.blocks.size();) {
      size_t last = first, bytes = 0;
      while (last < ids.blocks.size() && (last == first || bytes + ref.block_bytes(ids.blocks[last]) <= kGpuBatchBytes))
        bytes += ref.block_bytes(ids.blocks[last++]);
      batches.emplace_back(first, last);
      first = last;
    }
    const auto compute = [&](size_t k) {
      return ref.blocks(std::span(ids.blocks).subspan(batches[k].first, batches[k].second - batches[k].first));
    };
    std::future<std::vector<std::shared_ptr<const RowBlockReference>>> next;
    if (!batches.empty()) next = std::async(std::launch::async, compute, 0);
    for (size_t k = 0; k < batches.size(); ++k) {
      const auto refs = next.get();
      if (k + 1 < batches.size()) next = std::async(std::launch::async, compute, k + 1);
      const size_t first = batches[k].first;
      parallel_for(static_cast<int64_t>(refs.size()), workers,
                   [&](int64_t j) { compare_block(first + static_cast<size_t>(j), refs[static_cast<size_t>(j)].get()); });
    }
  } else {
    parallel_for(static_cast<int64_t>(ids.blocks.size()), workers, [&](int64_t b) {
      const std::shared_ptr<const RowBlockReference> block = ref.block(ids.blocks[static_cast<size_t>(b)]);
      compare_block(static_cast<size_t>(b), block.get());
    });
  }
  if (need_naive) {
    NaiveErrors all;
    for (const NaiveErrors& e : naive) all = max_errors(all, e);
    ref.set_tolerance(rule_tolerance(all, run.attention.dtype));
  }
  return row_errors;
}

}  // namespace ts
