// The float64 reference of a run, as the analysis and the views use it: the reference of every
// row block the run's events hold (kernels/reference.h, cut at the key positions where those
// events' ranges start and end), what each event should have held (from the event's own
// description: its rows and keys, not a tiling), and the tolerance its verdicts use.
//
//   RunReference ref(run);                        // checks and converts the traced heads' inputs
//   RefState want = ref.expected(run.headers[i]); // canonical: unnormalised, or normalised output
//   const Tolerance& tol = ref.tolerance();       // the rule's bars (computed on first use)
//
// Before anything is computed the run's claims are weighed: a row block whose reference would
// need more than kMaxRowBlockBytes (a hostile file can claim any sizes) is refused with an
// AnalysisError that says what the trace claims and what it would cost.
//
// Thread-safe: row blocks are computed on first use and cached (LRU, `cache_bytes` in all).
// The naive baselines' float32 keys of a kv head are made when its row blocks ask for them and
// only a few are kept (kNaiveKeysKept): a decode trace's would be another GiB of fresh pages,
// most of its opening time, and each is read by its few row blocks only. They are made from the
// run's inputs, so the run must outlive its RunReference (as every user of one has it).
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "app/model/analysis/analysis_error.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/naive_baseline.h"
#include "app/model/analysis/tolerance.h"
#include "app/model/run_view.h"
#include "kernels/reference.h"
#include "kernels/reference_gpu.h"

namespace ts {

// Where row blocks are computed: `automatic` takes the GPU when one is present, the head dim
// fits kernels/reference_gpu.h and the reference is large enough to pay for starting it (about
// half a second of float64 work for each CPU thread: an S = 8192 Split-K trace on 2 cores, not
// on 16), else the CPU; the environment's TILESCOPE_REFERENCE=cpu or =gpu overrides it. `gpu`
// insists (AnalysisError when no device can be used).
enum class ReferenceDevice { automatic, cpu, gpu };

struct RunReferenceOptions {
  size_t cache_bytes = size_t{256} << 20;       // row block references kept for re-use
  unsigned workers = 0;                         // threads for computing the tolerance (0: all)
  std::optional<ToleranceOverride> tolerance;   // --tol: replaces the correctness rule
  ReferenceDevice device = ReferenceDevice::automatic;
  // What keeps the run's inputs alive (the viewer's shared RunView): float32 values are then read
  // in place, not copied (ReferenceInputs' inputs_owner; a decode trace's V is half a GiB).
  std::shared_ptr<const void> inputs_owner;
};

// The most memory one row block's reference may take (its piece and prefix states).
inline constexpr size_t kMaxRowBlockBytes = size_t{1} << 30;
// Row blocks for_each_block has the GPU compute at a time: their references (pieces and
// prefixes) within this many bytes, so that a run of large row blocks does not hold them all at
// once, and so that the CPU works on one batch while the GPU computes the next.
inline constexpr size_t kGpuBatchBytes = size_t{64} << 20;
// Consecutive row blocks of one (batch, head) that for_each_block computes together on the CPU, up
// to this many rows (a Split-K trace's blocks of 8 rows, 8 at a time).
inline constexpr int32_t kRowsComputedTogether = 64;
// The naive baselines' keys kept for re-use (kv heads): enough for the query heads of a GQA
// group read in turn on every analysis thread.
inline constexpr size_t kNaiveKeysKept = 8;

class RunReference {
 public:
  // Throws AnalysisError when the run's attention is invalid, when inputs are present but do not
  // fit it, when an event's (batch, head) or its kv head has no inputs (the first such pair in
  // (batch, head) order is named), or when a row block would cost more than kMaxRowBlockBytes.
  explicit RunReference(const RunView& run, RunReferenceOptions options = {});

  const AttentionSpec& attention() const { return spec_; }
  const std::vector<StageInfo>& stages() const { return stages_; }
  // The row blocks of the run's compared events, sorted.
  const std::vector<RowBlock>& row_blocks() const { return blocks_; }

  // The reference of one row block (computed on first use, then cached). Throws AnalysisError
  // for a row block the run does not hold.
  std::shared_ptr<const RowBlockReference> block(const RowBlock& rb) const;
  // The same for several row blocks: those not cached are computed together (one batch of the
  // GPU when on_gpu(); on the calling thread on the CPU).
  std::vector<std::shared_ptr<const RowBlockReference>> blocks(std::span<const RowBlock> rbs) const;
  // fn(i, reference of rbs[i]) for every i, on `workers` threads (0: every core), each once: the
  // row blocks already cached first (computing the others may evict them), then the others, on
  // the GPU in batches of at most kGpuBatchBytes (the next batch computed while the CPU's threads
  // work on this one), on the CPU a run at a time (for_each_run) by the thread that takes it. The
  // first exception fn or the reference throws stops the loop and is rethrown.
  void for_each_block(std::span<const RowBlock> rbs, unsigned workers,
                      const std::function<void(size_t i, const RowBlockReference& block)>& fn) const;
  // The same a run at a time: fn(indices into rbs, their references), each block in exactly one
  // run. A run is several consecutive row blocks of one (batch, head) with the same boundaries
  // (in row order, at most kRowsComputedTogether rows), computed together, when the CPU computes
  // them; one block otherwise (cached ones, and on the GPU).
  using RunFunction =
      std::function<void(std::span<const size_t> indices, std::span<const RowBlockReference* const> blocks)>;
  void for_each_run(std::span<const RowBlock> rbs, unsigned workers, const RunFunction& fn) const;
  // The memory a row block's reference will take (its pieces and prefixes), for batching.
  size_t block_bytes(const RowBlock& rb) const;
  // Whether row blocks are computed on a GPU, and which device computes them ("CPU" or the
  // GPU's reason for not being used, for reports).
  bool on_gpu() const { return gpu_ != nullptr; }
  const std::string& device_note() const { return device_note_; }
  bool has_cached(const RowBlock& rb) const;
  // What an event should hold, canonical (its stage's kind: final -> the output).
  RefState expected(const EventHeader& h, const RowBlockReference& block) const;
  RefState expected(const EventHeader& h) const;

  // The naive baselines' errors on one row block (the correctness rule's yardstick).
  NaiveErrors naive_errors(const RowBlockReference& block) const;
  // The same for a run of for_each_run (their largest; its rows' baselines computed at once).
  NaiveErrors naive_errors(std::span<const RowBlockReference* const> run) const;

  // The tolerance of the verdicts: the override when one was given, else the rule from the
  // naive errors over every row block (computed in parallel on first use unless set).
  const Tolerance& tolerance() const;
  void set_tolerance(const Tolerance& tolerance);
  bool has_tolerance() const;

 private:
  AttentionSpec spec_;
  std::vector<StageInfo> stages_;
  RunReferenceOptions options_;
  std::unique_ptr<ReferenceInputs> inputs_;
  std::unique_ptr<GpuReference> gpu_;              // after inputs_, which it reads
  std::string device_note_ = "CPU";
  mutable std::mutex gpu_mutex_;                   // GpuReference::compute: one caller at a time
  std::vector<PairFloats> floats_;                 // by inputs' q_pairs index; keys made on use
  const HeadInputs* run_inputs_ = nullptr;         // the run's, which the naive keys are made from
  mutable std::mutex naive_mutex_;
  mutable std::list<std::pair<int32_t, std::shared_ptr<const NaiveKeys>>> naive_keys_;  // by kv index, recent first
  std::shared_ptr<const NaiveKeys> naive_keys_of(int32_t kv_index) const;
  std::vector<RowBlock> blocks_;
  std::map<RowBlock, std::vector<int64_t>> boundaries_;

  void choose_device();
  // Caches a computed row block (LRU within cache_bytes); returns the cached one when another
  // thread was faster.
  std::shared_ptr<const RowBlockReference> remember(const RowBlock& rb,
                                                    std::shared_ptr<const RowBlockReference> computed) const;

  mutable std::mutex cache_mutex_;
  struct Cached {
    std::shared_ptr<const RowBlockReference> ref;
    std::list<RowBlock>::iterator lru;
  };
  mutable std::map<RowBlock, Cached> cache_;
  mutable std::list<RowBlock> lru_;  // most recent first
  mutable size_t cached_bytes_ = 0;

  mutable std::mutex tolerance_mutex_;
  mutable std::optional<Tolerance> tolerance_;
};

}  // namespace ts
