// The float64 reference, tile-exact: for the tiling a launch used, what every probe of the
// kernels should have held — each FA-1 step's running state (kv tiles [0, j+1)), each Split-K
// split's partial state (its kv tiles), each reduce step's merged state (splits 0..k, i.e. kv
// tiles [0, end of split k)), and the final O and LSE — per (batch, head, query tile).
//
// States use the conventions of trace_event.h: unnormalised (m = max scaled score, l = sum
// exp(s - m), O = sum exp(s - m) v; a row that sees no key of the range has m = -inf, l = 0,
// O = 0) for the intermediate stages; normalised (m channel = LSE, l channel = 1, O = softmax
// V; a row that sees no key at all has LSE = -inf and O = 0) for the final output.
//
// Cost: a query tile's reference is computed once (scores of its rows against every key, and
// one state per kv tile; any kv range is then a merge of those, prefixes [0, e) are kept) and
// cached; Reference is safe to query from several threads, and `precompute` fills the cache in
// parallel.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "instrumentation/trace/trace_event.h"
#include "base/attention_inputs.h"
#include "kernels/tiling.h"

namespace ts {

// What some rows of a query tile hold at one point: m[r], l[r], o[r * head_dim + c].
struct RefState {
  Convention convention = Convention::unnormalized;
  int32_t rows = 0;
  int32_t head_dim = 0;
  std::vector<double> m, l, o;
};

// The reference of one (batch, head, query tile).
class TileReference {
 public:
  TileReference(int32_t rows, int32_t head_dim, int32_t num_kv_tiles);

  int32_t rows() const { return rows_; }
  int32_t head_dim() const { return head_dim_; }
  int32_t num_kv_tiles() const { return num_kv_tiles_; }

  // The unnormalised state over kv tiles [begin, end) (0 <= begin <= end <= num_kv_tiles;
  // throws std::out_of_range otherwise). Masked keys count for nothing.
  RefState kv_range(int32_t begin, int32_t end) const;
  // The attention output of these rows: normalised convention (m channel = LSE, l channel = 1).
  RefState final_output() const;

  // Filled by the reference's computation: one unnormalised state per kv tile.
  std::vector<double>& tile_m() { return tile_m_; }  // [kv_tile][row]
  std::vector<double>& tile_l() { return tile_l_; }  // [kv_tile][row]
  std::vector<double>& tile_o() { return tile_o_; }  // [kv_tile][row][c]
  void finish();  // computes the prefix states once the per-tile states are filled
  size_t bytes() const;

 private:
  void merge_tile_into(RefState& s, int32_t tile) const;

  int32_t rows_, head_dim_, num_kv_tiles_;
  std::vector<double> tile_m_, tile_l_, tile_o_;
  std::vector<RefState> prefix_;  // prefix_[e] = kv_range(0, e)
};

// Merges unnormalised state b into a (log-sum-exp), in float64. Exposed for tests.
void merge_states(RefState& a, const RefState& b);

class Reference {
 public:
  // Keeps its own copy of the inputs (pass an rvalue to move them in). Throws ConfigError /
  // InputError when config, tiling and inputs disagree.
  Reference(const AttentionConfig& config, const Tiling& tiling, AttentionInputs inputs,
            size_t cache_bytes = size_t{1} << 30);

  const AttentionConfig& config() const { return config_; }
  const Tiling& tiling() const { return tiling_; }

  // The reference of one query tile (computed on first use, then cached while it fits).
  std::shared_ptr<const TileReference> tile(int64_t batch, int64_t head, int64_t q_tile) const;
  // Whether that tile is in the cache now.
  bool has_cached(int64_t batch, int64_t head, int64_t q_tile) const;

  // What an event should hold, from its stage and coordinates: fa1.step / splitk.partial /
  // splitk.reduce -> kv_range(kv_tile_begin, kv_tile_end); final -> final_output(). Throws
  // std::out_of_range for coordinates outside the run.
  RefState expected(const EventHeader& event) const;

  struct TileKey {
    int64_t batch, head, q_tile;
  };
  // Computes these tiles' references on `workers` threads (0: hardware concurrency) into the
  // cache (those that fit).
  void precompute(std::span<const TileKey> tiles, unsigned workers = 0) const;

  // The whole output, for comparisons: o [batch, heads, seq_q, head_dim] and lse
  // [batch, heads, seq_q] in float64, computed in parallel; does not fill the cache.
  struct Output {
    std::vector<double> o, lse;
  };
  Output output(unsigned workers = 0) const;

 private:
  std::shared_ptr<TileReference> compute(int64_t batch, int64_t head, int64_t q_tile) const;

  AttentionConfig config_;
  Tiling tiling_;
  HostTensor q_, k_, v_;
  double scale_;
  size_t cache_bytes_;
  mutable std::mutex mutex_;
  struct Cached {
    std::shared_ptr<const TileReference> tile;
    std::list<int64_t>::iterator lru;
  };
  mutable std::map<int64_t, Cached> cache_;
  mutable std::list<int64_t> lru_;  // most recent first
  mutable size_t cached_bytes_ = 0;
};

}  // namespace ts
