// How a launch cuts the attention problem into tiles: query tiles of block_m rows, kv tiles of
// block_n keys, and (Split-K) splits of consecutive kv tiles. The kernels, the launchers, the
// trace metadata and the float64 reference all read the same Tiling, so the reference can
// say what every probe should have held.
#pragma once

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "base/attention_config.h"
#include "kernels/tile_shapes.h"

namespace ts {

struct Tiling {
  KernelKind kernel = KernelKind::fa1;
  int64_t seq_q = 0;
  int64_t seq_kv = 0;
  bool causal = false;
  int64_t window_left = -1;   // the config's sliding window (-1: unbounded)
  int64_t window_right = -1;
  int32_t block_m = 0;
  int32_t block_n = 0;
  int32_t num_q_tiles = 0;
  int32_t num_kv_tiles = 0;
  int32_t num_splits = 1;          // FA-1, FA-2: 1
  int32_t kv_tiles_per_split = 0;  // FA-1, FA-2: num_kv_tiles

  // kv tiles [begin, end) of split s; possibly empty (see split_kv_tile_range).
  KvTileRange split_kv_tiles(int32_t split) const {
    return split_kv_tile_range(split, kv_tiles_per_split, num_kv_tiles);
  }
  // The mask the kernels apply (causal, window), which decides the tiles they visit.
  KernelMask mask() const { return {seq_q, seq_kv, causal, window_left, window_right}; }
  // The kv tiles holding a key that some row of the query tile sees: the tiles FA-1 visits, and
  // (within its split) a Split-K partial block; all of them without a mask.
  KvTileRange kv_tiles_visited(int64_t q_tile) const { return visible_kv_tiles(mask(), block_m, block_n, q_tile); }
  int32_t rows_in_q_tile(int64_t q_tile) const { return ts::rows_in_q_tile(seq_q, block_m, q_tile); }

  bool operator==(const Tiling&) const = default;
};

// The tiling a launch of `config` uses on a device with `sm_count` multiprocessors. Split-K
// (splitk, and splitk2 on FA-2's tiles) takes config.num_splits when given (> 0), else chooses
// it with choose_num_splits. Throws
// ConfigError for an invalid config or sm_count < 1.
Tiling make_tiling(const AttentionConfig& config, int sm_count);

// The Split-K heuristic, in the spirit of flash-attention's: when the blocks without splitting
// (batch * heads * query tiles) already fill most of the device's resident-block slots, one
// split; otherwise the smallest split count whose last wave of blocks is nearly as full as the
// best achievable, among counts that leave no split empty, at most min(128, kv tiles). Resident
// blocks per multiprocessor: kSplitkBlocksPerSm (kernels/tile_shapes.h).
int32_t choose_num_splits(int64_t blocks_without_split, int sm_count, int32_t num_kv_tiles);

// The CPU backend has no multiprocessors; it uses an H100's count so that the heuristic picks
// the same split count as on the GPU it mimics, and traces of both backends line up.
inline constexpr int kCpuNominalSmCount = 132;

void to_json(nlohmann::json& j, const Tiling& tiling);
// Checks every field's type and that the fields are consistent with each other (the tile
// counts follow from the sizes and tile shapes); throws ConfigError naming the field.
void from_json(const nlohmann::json& j, Tiling& tiling);

}  // namespace ts
