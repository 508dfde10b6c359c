#include "kernels/fault_trigger.h"

#include <algorithm>

#include "base/count_text.h"

namespace ts {
namespace {

// The most kv tiles one block walks: FA-1 blocks walk the tiles their query tile sees; Split-K
// partial blocks the tiles of their split that their query tile sees.
int32_t most_kv_tiles_per_block(const Tiling& t) {
  int32_t most = 0;
  for (int32_t q = 0; q < t.num_q_tiles; ++q) {
    const int32_t visible_end = t.kv_tiles_visited(q).end;
    for (int32_t s = 0; s < t.num_splits; ++s) {
      const KvTileRange r = t.kernel == KernelKind::fa1 ? KvTileRange{0, t.num_kv_tiles} : t.split_kv_tiles(s);
      most = std::max(most, KvTileRange{r.begin, std::min(r.end, visible_end)}.size());
    }
  }
  return most;
}

bool has_empty_split(const Tiling& t) {
  for (int32_t s = 0; s < t.num_splits; ++s)
    if (t.split_kv_tiles(s).empty()) return true;
  return false;
}

// Split-K's faulty partial visits every tile of its split: a row meets a fully masked tile first
// when its split starts past the row's causal limit. Query row 0 has the lowest limit
// (key seq_kv - seq_q), so it is the row to check.
bool a_split_starts_past_a_rows_limit(const Tiling& t) {
  for (int32_t s = 0; s < t.num_splits; ++s) {
    const KvTileRange r = t.split_kv_tiles(s);
    if (!r.empty() && int64_t{r.begin} * t.block_n > t.seq_kv - t.seq_q) return true;
  }
  return false;
}

std::string one_tile_reason(const Tiling& t) {
  return "no block of this config walks more than one kv tile (" + count_of(t.num_kv_tiles, "kv tile") + " of " +
         std::to_string(t.block_n) + " keys" +
         (t.kernel == KernelKind::splitk ? ", " + std::to_string(t.kv_tiles_per_split) + " per split" : std::string()) +
         "); it needs a longer --seq-kv" + (t.kernel == KernelKind::splitk ? " or fewer --splits" : "");
}

}  // namespace

std::string why_fault_cannot_show(const AttentionConfig& c, const Tiling& t) {
  const bool splitk = c.kernel == KernelKind::splitk;
  // The catalogue's own record of where each fault lives (validate() refuses the others).
  const FaultInfo& info = fault_info(c.fault);
  if (c.fault != Fault::none && !(splitk ? info.splitk : info.fa1))
    return "it is not a fault of the " + std::string(to_string(c.kernel)) + " kernel";
  switch (c.fault) {
    case Fault::none: return {};
    case Fault::double_count_l:
      if (t.seq_kv < 2) return "no split sees more than one key, so every split's sum l is 1 and weighting by it changes nothing";
      return {};
    case Fault::masked_nan:
      if (!c.causal) return "without --causal no tile or split is fully masked";
      if (t.seq_q > t.seq_kv) return {};  // rows that see no key at all
      if (splitk && a_split_starts_past_a_rows_limit(t)) return {};
      return splitk ? "under this causal mask every row sees a key in every split (it needs a split that starts past "
                      "a query row's last visible key: more --splits, or --seq-q closer to --seq-kv)"
                    : "under this causal mask every row sees a key in the first kv tile (FA-1 meets a fully masked "
                      "tile only when --seq-q exceeds --seq-kv)";
    case Fault::empty_split:
      if (!has_empty_split(t))
        return "every one of the " + count_of(t.num_splits, "split") + " has a kv tile (it needs more --splits than the run's " +
               count_of(t.num_kv_tiles, "kv tile") + ")";
      return {};
    case Fault::partial_layout:
      if (t.num_splits < 2) return "with one split the wrong query stride still finds every query's partial";
      if (t.seq_q < 2) return "query 0 is read right, and this run has one query row";
      return {};
    case Fault::per_tile_softmax:
    case Fault::stale_accumulator:
      if (most_kv_tiles_per_block(t) < 2) return one_tile_reason(t);
      return {};
    case Fault::missing_barrier:
      if (most_kv_tiles_per_block(t) < 2) return one_tile_reason(t);
      return "it is a race between the threads of a block, which shows only when some run ahead into the next kv "
             "tile; this run's schedule did not (on the CPU backend, --perturb-seed reorders the threads between "
             "barriers)";
  }
  return {};
}

}  // namespace ts
