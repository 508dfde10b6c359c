#include "app/model/analysis/run_reference.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "app/model/analysis/naive_baseline.h"
#include "app/model/analysis/parallel_for.h"

namespace ts {
namespace {

std::string pair_name(int32_t batch, int32_t head) {
  return "(batch " + std::to_string(batch) + ", head " + std::to_string(head) + ")";
}

// Leading index p of a [P, seq, head_dim] tensor as [1, 1, seq, head_dim].
HostTensor pair_slice(const HostTensor& t, size_t p, const char* name, int64_t seq, int64_t d) {
  if (t.shape.size() != 3 || t.shape[1] != seq || t.shape[2] != d)
    throw AnalysisError(std::string("the run's inputs.") + name + " has shape " + shape_string(t.shape) +
                        "; the config needs [pairs, " + std::to_string(seq) + ", " + std::to_string(d) + "]");
  HostTensor out;
  out.dtype = t.dtype;
  out.shape = {1, 1, seq, d};
  const size_t bytes = static_cast<size_t>(seq * d) * t.element_size();
  if (t.bytes.size() < (p + 1) * bytes)
    throw AnalysisError(std::string("the run's inputs.") + name + " holds fewer bytes than its shape");
  out.bytes.assign(t.bytes.begin() + static_cast<ptrdiff_t>(p * bytes),
                   t.bytes.begin() + static_cast<ptrdiff_t>((p + 1) * bytes));
  return out;
}

}  // namespace

RunReference::RunReference(const RunView& run, RunReferenceOptions options)
    : config_(run.config), tiling_(run.tiling), options_(options) {
  try {
    validate(config_);
  } catch (const ConfigError& e) {
    throw AnalysisError(std::string("the run's config is invalid: ") + e.what());
  }
  if (tiling_.kernel != config_.kernel || tiling_.seq_q != config_.seq_q || tiling_.seq_kv != config_.seq_kv ||
      tiling_.causal != config_.causal || tiling_.block_m != run.block_m || tiling_.block_m <= 0 ||
      tiling_.block_n <= 0 || run.head_dim != config_.head_dim)
    throw AnalysisError("the run's tiling (block_m " + std::to_string(tiling_.block_m) + ", kernel " +
                        std::string(to_string(tiling_.kernel)) + ") does not fit its config and events (block_m " +
                        std::to_string(run.block_m) + ", head_dim " + std::to_string(run.head_dim) + ")");

  const size_t npairs = run.inputs.pairs.size();
  const size_t per_pair_cache = npairs ? options_.cache_bytes / npairs : options_.cache_bytes;
  for (size_t p = 0; p < npairs; ++p) {
    const int32_t b = run.inputs.pairs[p][0], h = run.inputs.pairs[p][1];
    if (b < 0 || b >= config_.batch || h < 0 || h >= config_.heads)
      throw AnalysisError("the run's inputs hold pair " + pair_name(b, h) + ", outside the config");
    Pair pair;
    pair.config = config_;
    pair.config.batch = pair.config.heads = 1;
    pair.inputs.q = pair_slice(run.inputs.q, p, "q", config_.seq_q, config_.head_dim);
    pair.inputs.k = pair_slice(run.inputs.k, p, "k", config_.seq_kv, config_.head_dim);
    pair.inputs.v = pair_slice(run.inputs.v, p, "v", config_.seq_kv, config_.head_dim);
    try {
      pair.reference = std::make_unique<Reference>(pair.config, tiling_, pair.inputs, per_pair_cache);
      pair.floats = pair_floats(pair.config, pair.inputs);
    } catch (const std::exception& e) {
      throw AnalysisError("the inputs of " + pair_name(b, h) + " cannot be used: " + e.what());
    }
    pairs_.emplace(std::make_pair(b, h), std::move(pair));
  }

  std::set<TileId> tiles;
  for (const EventHeader& h : run.headers)
    if (h.batch >= 0 && h.batch < config_.batch && h.head >= 0 && h.head < config_.heads && h.q_tile >= 0 &&
        h.q_tile < tiling_.num_q_tiles)
      tiles.insert({h.batch, h.head, h.q_tile});
  tiles_.assign(tiles.begin(), tiles.end());
  // Checked here, in (batch, head) order, rather than when a worker first reaches a tile: the
  // message then names the same pair on every run, whichever tile a thread happened to take first.
  for (const TileId& t : tiles_) pair(t.batch, t.head);
  if (options_.tolerance) tolerance_ = override_tolerance(*options_.tolerance);
}

const RunReference::Pair& RunReference::pair(int32_t batch, int32_t head) const {
  auto it = pairs_.find({batch, head});
  if (it == pairs_.end())
    throw AnalysisError("the run holds events of " + pair_name(batch, head) +
                        " but not that pair's inputs, so its reference cannot be computed; capture it "
                        "with its inputs (a trace keeps the inputs of the pairs it traces)");
  return it->second;
}

std::shared_ptr<const TileReference> RunReference::tile(const TileId& id) const {
  return pair(id.batch, id.head).reference->tile(0, 0, id.q_tile);
}

bool RunReference::has_cached(const TileId& id) const {
  const auto it = pairs_.find({id.batch, id.head});
  return it != pairs_.end() && it->second.reference->has_cached(0, 0, id.q_tile);
}

RefState RunReference::expected(const EventKey& key, const TileReference& tile) const {
  if (static_cast<Stage>(key.stage) == Stage::final_output) return tile.final_output();
  const KvTileRange r = expected_kv_range(key, tiling_);
  return tile.kv_range(r.begin, r.end);
}

RefState RunReference::expected(const EventKey& key) const {
  return expected(key, *tile({key.batch, key.head, key.q_tile}));
}

NaiveErrors RunReference::naive_errors(const TileId& id, const TileReference& tile) const {
  const Pair& p = pair(id.batch, id.head);
  return naive_tile_errors(p.config, p.floats, tiling_, id.q_tile, tile);
}

const Tolerance& RunReference::tolerance() const {
  std::lock_guard lock(tolerance_mutex_);
  if (!tolerance_) {
    std::vector<NaiveErrors> per_tile(tiles_.size());
    parallel_for(static_cast<int64_t>(tiles_.size()), options_.workers, [&](int64_t i) {
      const TileId& id = tiles_[static_cast<size_t>(i)];
      per_tile[static_cast<size_t>(i)] = naive_errors(id, *tile(id));
    });
    NaiveErrors all;
    for (const NaiveErrors& e : per_tile) all = max_errors(all, e);
    tolerance_ = rule_tolerance(all, config_.dtype);
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
