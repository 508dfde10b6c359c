#include "app/model/analysis/run_reference.h"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <set>
#include <string>

#include "app/model/analysis/parallel_for.h"
#include "instrumentation/trace/trace_file.h"

namespace ts {
namespace {

std::string pair_name(int64_t batch, int64_t head, const char* what = "head") {
  return "(batch " + std::to_string(batch) + ", " + what + " " + std::to_string(head) + ")";
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(size_t{1} << 30));
  return buf;
}

}  // namespace

RunReference::RunReference(const RunView& run, RunReferenceOptions options)
    : spec_(run.attention), stages_(run.stages), options_(options) {
  try {
    validate(spec_);
  } catch (const std::exception& e) {
    throw AnalysisError(std::string("the run's attention description is invalid: ") + e.what());
  }
  // The row blocks of the comparable events, with the key positions their ranges start and end.
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (h.rows <= 0 || !event_header_problem(h, run.num_stages(), spec_, run.max_rows).empty() ||
        !event_problem(h, spec_).empty())
      continue;
    std::vector<int64_t>& cuts = boundaries_[row_block(h)];
    for (const KeyRange& r : event_key_ranges(h, run.stage_of(i), spec_)) {
      cuts.push_back(r.begin);
      cuts.push_back(r.end);
    }
  }
  for (auto& [rb, cuts] : boundaries_) {
    cuts.push_back(0);
    cuts.push_back(spec_.seq_kv);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    blocks_.push_back(rb);
    // Pieces and prefixes of float64 states, and the baselines' float32 states of each piece.
    const double pieces = static_cast<double>(cuts.size());
    const double bytes = pieces * rb.rows * (spec_.head_dim + 2) * (8.0 * 2 + 4.0);
    if (bytes > static_cast<double>(kMaxRowBlockBytes))
      throw AnalysisError("the trace claims events over " + std::to_string(cuts.size() - 1) + " key pieces for " +
                          std::to_string(rb.rows) + " rows of " + pair_name(rb.batch, rb.head) + " (head dim " +
                          std::to_string(spec_.head_dim) + "), whose reference would need " + gib(bytes) +
                          "; more than the " + gib(double(kMaxRowBlockBytes)) +
                          " the analysis allows per row block (a damaged or hostile trace?)");
  }

  // Every row block's (batch, head) and kv head must have inputs: checked here, in (batch, head)
  // order, so that the message names the same pair on every run.
  std::set<std::pair<int32_t, int32_t>> heads;
  for (const RowBlock& rb : blocks_) heads.insert({rb.batch, rb.head});
  for (const auto& [b, h] : heads) {
    if (run.inputs.q_index(b, h) < 0) {
      const auto stored = run.metadata.find(std::string(trace_meta::inputs_stored));
      if (stored != run.metadata.end() && stored->second == "none")
        throw AnalysisError("the run holds events of " + pair_name(b, h) +
                            " but no input values: it was recorded with its input files' names and SHA-256 only "
                            "(--no-store-inputs), and tilescope does not read those files back, so its reference "
                            "cannot be computed; record it again with its inputs stored");
      throw AnalysisError("the run holds events of " + pair_name(b, h) +
                          " but not that head's inputs, so its reference cannot be computed; capture it with its "
                          "inputs (a trace keeps the inputs of the heads it traces)");
    }
    const int64_t kvh = spec_.kv_head_of(h);
    if (run.inputs.kv_index(b, kvh) < 0)
      throw AnalysisError("the run holds events of " + pair_name(b, h) + " but not the keys and values of its " +
                          pair_name(b, kvh, "kv head") + ", so its reference cannot be computed");
  }
  if (!blocks_.empty()) {
    try {
      inputs_ = std::make_unique<ReferenceInputs>(spec_, run.inputs, options_.workers, options_.inputs_owner);
      floats_ = pair_queries(spec_, run.inputs);
      run_inputs_ = &run.inputs;
    } catch (const std::exception& e) {
      throw AnalysisError(std::string("the run's inputs cannot be used: ") + e.what());
    }
  }
  if (options_.tolerance) tolerance_ = override_tolerance(*options_.tolerance);
  if (inputs_) choose_device();
}

void RunReference::choose_device() {
  ReferenceDevice device = options_.device;
  if (device == ReferenceDevice::automatic)
    if (const char* env = std::getenv("TILESCOPE_REFERENCE")) {
      const std::string v = env;
      if (v == "cpu") device = ReferenceDevice::cpu;
      else if (v == "gpu") device = ReferenceDevice::gpu;
    }
  if (device == ReferenceDevice::cpu) return;
  // Automatically, the GPU only when the work pays for starting it (a CUDA context and the
  // upload cost a few tenths of a second): at least kGpuWorthMacsPerWorker multiply-adds for each
  // CPU thread (about half a second of one core's float64 arithmetic).
  constexpr double kGpuWorthMacsPerWorker = 4e9;
  double macs = 0;
  for (const RowBlock& rb : blocks_) macs += 2.0 * rb.rows * static_cast<double>(spec_.seq_kv) * spec_.head_dim;
  if (device == ReferenceDevice::automatic &&
      macs < kGpuWorthMacsPerWorker * static_cast<double>(analysis_workers(options_.workers))) {
    device_note_ = "CPU (small enough for its threads)";
    return;
  }
  std::string reason;
  if (spec_.head_dim > kGpuReferenceMaxHeadDim) {
    reason = "head dim " + std::to_string(spec_.head_dim) + " is over the GPU path's " +
             std::to_string(kGpuReferenceMaxHeadDim);
  } else if (gpu_reference_available(&reason)) {
    try {
      gpu_ = std::make_unique<GpuReference>(*inputs_);
      device_note_ = "GPU";
      return;
    } catch (const GpuReferenceError& e) {
      reason = e.what();
    }
  }
  if (device == ReferenceDevice::gpu)
    throw AnalysisError("the reference was asked to run on the GPU, but " + reason);
  device_note_ = "CPU (" + reason + ")";
}

size_t RunReference::block_bytes(const RowBlock& rb) const {
  const auto cuts = boundaries_.find(rb);
  const size_t pieces = cuts == boundaries_.end() ? 1 : cuts->second.size();
  return pieces * static_cast<size_t>(rb.rows) * static_cast<size_t>(spec_.head_dim + 2) * 2 * sizeof(double);
}

std::vector<std::shared_ptr<const RowBlockReference>> RunReference::blocks(std::span<const RowBlock> rbs) const {
  std::vector<std::shared_ptr<const RowBlockReference>> out(rbs.size());
  if (!gpu_) {
    for (size_t i = 0; i < rbs.size(); ++i) out[i] = block(rbs[i]);
    return out;
  }
  std::vector<RowBlock> missing;
  std::vector<std::vector<int64_t>> cuts;
  std::vector<size_t> where;
  {
    std::lock_guard lock(cache_mutex_);
    for (size_t i = 0; i < rbs.size(); ++i) {
      auto it = cache_.find(rbs[i]);
      if (it != cache_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        out[i] = it->second.ref;
        continue;
      }
      const auto c = boundaries_.find(rbs[i]);
      if (c == boundaries_.end())
        throw AnalysisError("no events of " + pair_name(rbs[i].batch, rbs[i].head) + " rows " +
                            std::to_string(rbs[i].q_begin) + "-" + std::to_string(rbs[i].q_begin + rbs[i].rows - 1) +
                            " in this run");
      missing.push_back(rbs[i]);
      cuts.push_back(c->second);
      where.push_back(i);
    }
  }
  if (missing.empty()) return out;
  std::vector<std::shared_ptr<const RowBlockReference>> computed;
  try {
    std::lock_guard lock(gpu_mutex_);
    computed = gpu_->compute(missing, cuts);
  } catch (const std::exception& e) {
    throw AnalysisError(std::string("the reference cannot be computed on the GPU: ") + e.what() +
                        " (TILESCOPE_REFERENCE=cpu computes it on the CPU)");
  }
  for (size_t j = 0; j < missing.size(); ++j) out[where[j]] = remember(missing[j], std::move(computed[j]));
  return out;
}

void RunReference::for_each_block(std::span<const RowBlock> rbs, unsigned workers,
                                  const std::function<void(size_t, const RowBlockReference&)>& fn) const {
  for_each_run(rbs, workers, [&](std::span<const size_t> indices, std::span<const RowBlockReference* const> refs) {
    for (size_t k = 0; k < indices.size(); ++k) fn(indices[k], *refs[k]);
  });
}

void RunReference::for_each_run(std::span<const RowBlock> rbs, unsigned workers, const RunFunction& fn) const {
  std::vector<size_t> cached, missing;
  for (size_t i = 0; i < rbs.size(); ++i) (has_cached(rbs[i]) ? cached : missing).push_back(i);
  const auto one = [&](size_t i, const RowBlockReference& ref) {
    const RowBlockReference* p = &ref;
    fn(std::span(&i, 1), std::span(&p, 1));
  };
  parallel_for(static_cast<int64_t>(cached.size()), workers, [&](int64_t j) {
    const size_t i = cached[static_cast<size_t>(j)];
    one(i, *block(rbs[i]));
  });
  if (!gpu_) {
    // Consecutive blocks of one pair with the same boundaries computed together, up to
    // kRowsComputedTogether rows (compute_row_blocks: the same bits, the keys read once).
    std::vector<size_t> order = missing;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rbs[a] < rbs[b]; });
    std::vector<std::vector<size_t>> runs;
    int32_t run_rows = 0;
    for (size_t i : order) {
      if (!runs.empty() && inputs_) {
        const RowBlock& last = rbs[runs.back().back()];
        if (last.batch == rbs[i].batch && last.head == rbs[i].head && last.q_begin + last.rows == rbs[i].q_begin &&
            run_rows + rbs[i].rows <= kRowsComputedTogether && boundaries_.at(last) == boundaries_.at(rbs[i])) {
          runs.back().push_back(i);
          run_rows += rbs[i].rows;
          continue;
        }
      }
      runs.push_back({i});
      run_rows = rbs[i].rows;
    }
    parallel_for(static_cast<int64_t>(runs.size()), workers, [&](int64_t k) {
      const std::vector<size_t>& run = runs[static_cast<size_t>(k)];
      if (run.size() == 1) {  // (without inputs block() says why it cannot compute)
        one(run.front(), *block(rbs[run.front()]));
        return;
      }
      std::vector<RowBlock> together;
      for (size_t i : run) together.push_back(rbs[i]);
      std::vector<std::shared_ptr<const RowBlockReference>> computed;
      try {
        computed = compute_row_blocks(*inputs_, together, boundaries_.at(together.front()));
      } catch (const std::exception& e) {
        throw AnalysisError("the reference of " + pair_name(together.front().batch, together.front().head) +
                            " cannot be computed: " + e.what());
      }
      std::vector<const RowBlockReference*> refs;
      for (size_t j = 0; j < run.size(); ++j) {
        computed[j] = remember(together[j], std::move(computed[j]));
        refs.push_back(computed[j].get());
      }
      fn(run, refs);
    });
    return;
  }
  std::vector<std::vector<RowBlock>> batches;  // of the missing blocks, in order
  std::vector<size_t> batch_begin;             // each batch's first index into `missing`
  for (size_t first = 0; first < missing.size();) {
    std::vector<RowBlock> batch;
    size_t bytes = 0;
    for (; first < missing.size() && (batch.empty() || bytes + block_bytes(rbs[missing[first]]) <= kGpuBatchBytes);
         ++first) {
      bytes += block_bytes(rbs[missing[first]]);
      batch.push_back(rbs[missing[first]]);
    }
    batch_begin.push_back(first - batch.size());
    batches.push_back(std::move(batch));
  }
  using Computed = std::vector<std::shared_ptr<const RowBlockReference>>;
  const auto compute = [&](size_t k) { return blocks(batches[k]); };
  std::future<Computed> next;  // std::async's: on any way out, waits for its batch
  if (!batches.empty()) next = std::async(std::launch::async, compute, 0);
  for (size_t k = 0; k < batches.size(); ++k) {
    const Computed refs = next.get();
    if (k + 1 < batches.size()) next = std::async(std::launch::async, compute, k + 1);
    parallel_for(static_cast<int64_t>(refs.size()), workers, [&](int64_t j) {
      one(missing[batch_begin[k] + static_cast<size_t>(j)], *refs[static_cast<size_t>(j)]);
    });
  }
}

std::shared_ptr<const RowBlockReference> RunReference::remember(const RowBlock& rb,
                                                               std::shared_ptr<const RowBlockReference> computed) const {
  const size_t bytes = computed->bytes();
  std::lock_guard lock(cache_mutex_);
  auto it = cache_.find(rb);
  if (it != cache_.end()) return it->second.ref;  // another thread was faster
  if (bytes > options_.cache_bytes) return computed;
  while (cached_bytes_ + bytes > options_.cache_bytes && !lru_.empty()) {
    auto victim = cache_.find(lru_.back());
    cached_bytes_ -= victim->second.ref->bytes();
    cache_.erase(victim);
    lru_.pop_back();
  }
  lru_.push_front(rb);
  cache_.emplace(rb, Cached{computed, lru_.begin()});
  cached_bytes_ += bytes;
  return computed;
}

std::shared_ptr<const RowBlockReference> RunReference::block(const RowBlock& rb) const {
  {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(rb);
    if (it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.ref;
    }
  }
  const auto cuts = boundaries_.find(rb);
  if (cuts == boundaries_.end() || !inputs_)
    throw AnalysisError("no events of " + pair_name(rb.batch, rb.head) + " rows " + std::to_string(rb.q_begin) +
                        "-" + std::to_string(rb.q_begin + rb.rows - 1) + " in this run");
  if (gpu_) return blocks(std::span(&rb, 1)).front();  // the same bits as the analysis's batches
  std::shared_ptr<const RowBlockReference> computed;
  try {
    computed = compute_row_block(*inputs_, rb, cuts->second);
  } catch (const std::exception& e) {
    throw AnalysisError("the reference of " + pair_name(rb.batch, rb.head) + " cannot be computed: " + e.what());
  }
  return remember(rb, std::move(computed));
}

bool RunReference::has_cached(const RowBlock& rb) const {
  std::lock_guard lock(cache_mutex_);
  return cache_.count(rb) != 0;
}

RefState RunReference::expected(const EventHeader& h, const RowBlockReference& block) const {
  const StageInfo& stage = stages_.at(static_cast<size_t>(h.stage));
  if (stage.kind == StageKind::final) return block.output();
  const std::vector<KeyRange> ranges = event_key_ranges(h, stage, spec_);
  return block.state(ranges);
}

RefState RunReference::expected(const EventHeader& h) const { return expected(h, *block(row_block(h))); }

NaiveErrors RunReference::naive_errors(const RowBlockReference& ref) const {
  const RowBlockReference* one = &ref;
  return naive_errors(std::span(&one, 1));
}

NaiveErrors RunReference::naive_errors(std::span<const RowBlockReference* const> refs) const {
  if (refs.empty()) return {};
  const RowBlock& rb = refs.front()->block();
  for (const PairFloats& f : floats_)
    if (f.batch == rb.batch && f.head == rb.head)
      return naive_row_block_errors(spec_, f, refs, naive_keys_of(f.kv_index).get(), stage_forms(stages_));
  throw AnalysisError("no inputs of " + pair_name(rb.batch, rb.head) + " for the naive baselines");
}

std::shared_ptr<const NaiveKeys> RunReference::naive_keys_of(int32_t kv_index) const {
  {
    const std::lock_guard lock(naive_mutex_);
    for (auto it = naive_keys_.begin(); it != naive_keys_.end(); ++it)
      if (it->first == kv_index) {
        naive_keys_.splice(naive_keys_.begin(), naive_keys_, it);
        return it->second;
      }
  }
  // Made outside the lock (two threads may both make one: the same keys, the second dropped).
  auto made = std::make_shared<const NaiveKeys>(
      naive_keys(spec_, *run_inputs_, kv_index, needs_raw_keys(spec_, stage_forms(stages_))));
  const std::lock_guard lock(naive_mutex_);
  naive_keys_.emplace_front(kv_index, made);
  if (naive_keys_.size() > kNaiveKeysKept) naive_keys_.pop_back();
  return made;
}

const Tolerance& RunReference::tolerance() const {
  std::lock_guard lock(tolerance_mutex_);
  if (!tolerance_) {
    std::vector<NaiveErrors> per_block(blocks_.size());
    parallel_for(static_cast<int64_t>(blocks_.size()), options_.workers, [&](int64_t i) {
      per_block[static_cast<size_t>(i)] = naive_errors(*block(blocks_[static_cast<size_t>(i)]));
    });
    NaiveErrors all;
    for (const NaiveErrors& e : per_block) all = max_errors(all, e);
    tolerance_ = rule_tolerance(all, spec_.dtype, stage_forms(stages_));
  }
  return *tolerance_;
}

bool RunReference::has_tolerance() const {
  std::lock_guard lock(tolerance_mutex_);
  return tolerance_.has_value();
}

void RunReference::set_tolerance(const Tolerance& tolerance) {
  std::lock_guard lock(tolerance_mutex_);
  tolerance_ = tolerance;
}

}  // namespace ts
