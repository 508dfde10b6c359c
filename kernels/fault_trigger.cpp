#include "kernels/fault_trigger.h"

#include <algorithm>

#include "base/count_text.h"

namespace ts {
namespace {

// What one query row meets in one block that serves it: the kv tiles the block visits, and the
// keys the row sees (KernelMask::row_keys: the kernels' own mask).
struct RowInBlock {
  KeySpan keys;         // the row's visible keys, all of them
  KvTileRange visited;  // the tiles its block visits
  KvTileRange split;    // Split-K: the block's split (FA-1, FA-2: every kv tile)
};

// Calls f(RowInBlock) for every query row and every block that serves it (FA-1: one block per
// row; Split-K: one partial block per split), until f returns true; returns whether one did.
// `mask_guard` false: the unguarded masked_nan kernel, whose Split-K blocks visit all of their
// split's tiles (kernels/tile_shapes.h: splitk_visited_tiles).
template <typename F>
bool any_row_in_block(const Tiling& t, bool mask_guard, F&& f) {
  const KernelMask mask = t.mask();
  for (int64_t row = 0; row < t.seq_q; ++row) {
    const KvTileRange visible = t.kv_tiles_visited(row / t.block_m);
    const KeySpan keys = mask.row_keys(row);
    if (!splits_kv(t.kernel)) {  // FA-1 and FA-2 walk the same tiles
      if (f(RowInBlock{keys, visible, KvTileRange{0, t.num_kv_tiles}})) return true;
      continue;
    }
    for (int32_t s = 0; s < t.num_splits; ++s) {
      const KvTileRange split = t.split_kv_tiles(s);
      if (f(RowInBlock{keys, splitk_visited_tiles(split, visible, mask_guard), split})) return true;
    }
  }
  return false;
}

int64_t key_of(const Tiling& t, int64_t tile) { return std::min<int64_t>(tile * t.block_n, t.seq_kv); }

// The row's visible keys within tiles [r.begin, r.end).
KeySpan keys_within(const Tiling& t, const KeySpan& keys, KvTileRange r) {
  const int64_t begin = std::max(keys.begin, key_of(t, r.begin)), end = std::min(keys.end, key_of(t, r.end));
  return {begin, std::max(begin, end)};
}

// The most kv tiles one block walks (FA-1: the tiles its query tile sees; Split-K: those of its
// split that its query tile sees).
int32_t most_kv_tiles_per_block(const Tiling& t) {
  int32_t most = 0;
  for (int32_t q = 0; q < t.num_q_tiles; ++q) {
    const KvTileRange visible = t.kv_tiles_visited(q);
    if (!splits_kv(t.kernel)) most = std::max(most, visible.size());
    else
      for (int32_t s = 0; s < t.num_splits; ++s)
        most = std::max(most, splitk_visited_tiles(t.split_kv_tiles(s), visible, true).size());
  }
  return most;
}

bool has_empty_split(const Tiling& t) {
  for (int32_t s = 0; s < t.num_splits; ++s)
    if (t.split_kv_tiles(s).empty()) return true;
  return false;
}

// masked_nan: the unguarded kernels compute exp(-inf - -inf) = NaN for a row at a tile it visits
// before it has seen any key. FA-1 visits the tiles its query tile sees, so a row meets one when
// it sees no key at all, or when its first key lies past its block's first tile; the unguarded
// Split-K partial visits every tile of its split, so a row meets one when it sees no key in its
// split's first tile.
bool a_row_meets_a_tile_before_its_first_key(const Tiling& t) {
  return any_row_in_block(t, /*mask_guard=*/false, [&](const RowInBlock& r) {
    if (r.keys.empty()) return true;  // FA-1's 0 / 0, Split-K's first tile of split 0
    if (r.visited.empty()) return false;
    return keys_within(t, r.keys, {r.visited.begin, r.visited.begin + 1}).empty();
  });
}

// per_tile_softmax: tiles normalised each by its own max disagree once a row sees keys in two.
bool a_row_sees_keys_in_two_tiles(const Tiling& t) {
  return any_row_in_block(t, true, [&](const RowInBlock& r) {
    const KeySpan k = keys_within(t, r.keys, r.visited);
    return !k.empty() && (k.end - 1) / t.block_n > k.begin / t.block_n;
  });
}

// double_count_l: a split's O weighted by its sum l again changes it only where l is not 1, where a
// row sees two keys or more of the split.
bool a_row_sees_two_keys_of_a_split(const Tiling& t) {
  return any_row_in_block(t, true, [&](const RowInBlock& r) {
    const KeySpan k = keys_within(t, r.keys, r.split);
    return k.end - k.begin >= 2;
  });
}

// fragment_rows: row r of each 16-row mma block gets row r xor 8's output. Nothing changes when
// every row and its partner hold the same output: both see no key (O = 0), or the same one key
// (O = that key's V row exactly). A partner past seq_q is a padding row of the tile, computed with a zero
// query under the same mask rule: it too holds O = 0 or one key's V row in those cases, and
// anything else otherwise.
// Split-K 2 exchanges the partial states of a split, so the same holds of each split's keys: its
// O is one key's V row when the row sees one key of the split, whichever other keys it sees.
bool a_row_and_its_partner_differ(const Tiling& t) {
  const KernelMask mask = t.mask();
  auto differ = [](KeySpan a, KeySpan b) {
    const int64_t na = std::max<int64_t>(0, a.end - a.begin), nb = std::max<int64_t>(0, b.end - b.begin);
    return na != nb || na > 1 || (na == 1 && a.begin != b.begin);
  };
  for (int64_t row = 0; row < t.seq_q; ++row) {
    const int64_t partner = row ^ 8;
    const KeySpan a = mask.row_keys(row), b = mask.row_keys(partner);
    if (!splits_kv(t.kernel)) {
      if (differ(a, b)) return true;
      continue;
    }
    for (int32_t s = 0; s < t.num_splits; ++s)
      if (differ(keys_within(t, a, t.split_kv_tiles(s)), keys_within(t, b, t.split_kv_tiles(s)))) return true;
  }
  return false;
}

std::string one_tile_reason(const Tiling& t) {
  Tiling without_window = t;
  without_window.window_left = without_window.window_right = -1;
  if (most_kv_tiles_per_block(without_window) >= 2)
    return "no block of this config walks more than one kv tile: the window " +
           window_text(t.window_left, t.window_right) + " keeps each query tile's keys within one tile of " +
           std::to_string(t.block_n) + " keys; it needs a wider --window";
  return "no block of this config walks more than one kv tile (" + count_of(t.num_kv_tiles, "kv tile") + " of " +
         std::to_string(t.block_n) + " keys" +
         (splits_kv(t.kernel) ? ", " + std::to_string(t.kv_tiles_per_split) + " per split" : std::string()) +
         "); it needs a longer --seq-kv" + (splits_kv(t.kernel) ? " or fewer --splits" : "");
}

}  // namespace

std::string why_fault_cannot_show(const AttentionConfig& c, const Tiling& t) {
  const bool splitk = splits_kv(c.kernel);
  // The catalogue's own record of where each fault lives (validate() refuses the others).
  if (!fault_applies(c.fault, c.kernel)) return "it is not a fault of the " + std::string(to_string(c.kernel)) + " kernel";
  switch (c.fault) {
    case Fault::none: return {};
    case Fault::double_count_l:
      if (!a_row_sees_two_keys_of_a_split(t))
        return "no row sees more than one key of a split, so every split's sum l is 0 or 1 and weighting by it "
               "changes nothing";
      return {};
    case Fault::masked_nan:
      if (!c.causal && !c.has_window()) return "without --causal or --window no tile or split is fully masked";
      if (a_row_meets_a_tile_before_its_first_key(t)) return {};
      return splitk ? "under this mask every row sees a key in the first kv tile of every split (it needs a split "
                      "that starts past a query row's last visible key, or one whose first tile a --window leaves "
                      "out: more --splits, or --seq-q closer to --seq-kv)"
                    : "under this mask every row sees a key in the first kv tile its query tile visits (" +
                          std::string(c.kernel == KernelKind::fa2 ? "FA-2" : "FA-1") + " meets a "
                      "fully masked tile only when a row sees no key, as when --seq-q exceeds --seq-kv under "
                      "--causal, or when a --window starts a row's keys past that tile)";
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
      if (most_kv_tiles_per_block(t) < 2) return one_tile_reason(t);
      if (!a_row_sees_keys_in_two_tiles(t))
        return "no row sees keys in more than one kv tile (the window " + window_text(t.window_left, t.window_right) +
               " keeps each row's keys within one tile of " + std::to_string(t.block_n) + " keys)";
      return {};
    case Fault::stale_accumulator:
      // A block walks the tiles where its rows see keys: when it walks two, the row that sees a
      // key in the first meets a second tile, where that tile's P V is added again.
      if (most_kv_tiles_per_block(t) < 2) return one_tile_reason(t);
      return {};
    case Fault::missing_barrier:
      if (most_kv_tiles_per_block(t) < 2) return one_tile_reason(t);
      return "it is a race between the threads of a block, which shows only when some run ahead into the next kv "
             "tile; this run's schedule did not (on the CPU backend, a perturbation seed reorders the threads "
             "between barriers)";
    case Fault::fragment_rows:
      if (!a_row_and_its_partner_differ(t))
        return std::string("every query row and its partner row (row xor 8) see the same single key or none") +
               (splits_kv(c.kernel) ? " of each split, so their partial states' O" : ", so their outputs") +
               " are equal and exchanging them changes nothing";
      return {};
  }
  return {};
}

}  // namespace ts
