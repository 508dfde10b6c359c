// The float64 reference of a run, as the analysis and the views use it: one kernels/reference.h
// Reference per traced (batch, head) pair (a trace may hold only some pairs' inputs), what every
// event should have held (from the event's identity and the tiling, not from its header's
// claims), and the tolerance its verdicts use.
//
//   RunReference ref(run);                        // copies the traced pairs' inputs
//   RefState want = ref.expected(event_key(run.headers[i]));
//   const Tolerance& tol = ref.tolerance();       // the rule's bars (computed on first use)
//
// Thread-safe: tiles are computed on first use and cached (LRU, `cache_bytes` in all).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "app/model/analysis/analysis_error.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/naive_baseline.h"
#include "app/model/analysis/tolerance.h"
#include "app/model/run_view.h"
#include "kernels/reference.h"

namespace ts {

struct RunReferenceOptions {
  size_t cache_bytes = size_t{256} << 20;       // reference tiles kept for re-use, all pairs
  unsigned workers = 0;                         // threads for computing the tolerance (0: all)
  std::optional<ToleranceOverride> tolerance;   // --tol: replaces the correctness rule
};

class RunReference {
 public:
  // Throws AnalysisError when the run's config or tiling are invalid, when inputs are present
  // but do not fit the config, or when a traced tile's pair has no inputs (the first such pair
  // in (batch, head) order is named).
  explicit RunReference(const RunView& run, RunReferenceOptions options = {});

  const AttentionConfig& config() const { return config_; }
  const Tiling& tiling() const { return tiling_; }
  // The traced tiles (those with at least one event), sorted.
  const std::vector<TileId>& traced_tiles() const { return tiles_; }

  // The reference of one query tile. Throws AnalysisError when the pair's inputs are absent,
  // std::out_of_range for coordinates outside the run.
  std::shared_ptr<const TileReference> tile(const TileId& id) const;
  // Whether tile(id) would be answered from the cache, without computing.
  bool has_cached(const TileId& id) const;
  // What an event should hold, from a tile's reference.
  RefState expected(const EventKey& key, const TileReference& tile) const;
  RefState expected(const EventKey& key) const;

  // The naive baselines' errors on one tile (the correctness rule's yardstick).
  NaiveErrors naive_errors(const TileId& id, const TileReference& tile) const;

  // The tolerance of the verdicts: the override when one was given, else the rule from the
  // naive errors over every traced tile (computed in parallel on first use unless set).
  const Tolerance& tolerance() const;
  void set_tolerance(const Tolerance& tolerance);
  bool has_tolerance() const;
  bool has_override() const { return options_.tolerance.has_value(); }

 private:
  struct Pair {
    AttentionConfig config;  // batch = heads = 1
    AttentionInputs inputs;
    PairFloats floats;  // for the naive float32 baseline
    std::unique_ptr<Reference> reference;
  };
  const Pair& pair(int32_t batch, int32_t head) const;

  AttentionConfig config_;
  Tiling tiling_;
  RunReferenceOptions options_;
  std::map<std::pair<int32_t, int32_t>, Pair> pairs_;
  std::vector<TileId> tiles_;
  mutable std::mutex tolerance_mutex_;
  mutable std::optional<Tolerance> tolerance_;
};

}  // namespace ts
