// Tile shapes of the kernels and the tile arithmetic that the kernels and the launch planner must
// agree on exactly (which kv tiles a query tile visits under the causal and window masks, which
// kv tiles a split covers). Host and device code alike; no dependencies but the mask rule
// (base/attention_rules.h).
#pragma once

#include <cstdint>

#include "base/attention_rules.h"
#include "base/host_device.h"

namespace ts {

// Threads per block of every kernel (4 warps).
inline constexpr int kKernelThreads = 128;

// FA-1: query rows x keys per tile. Register tiles of 64x64 up to head_dim 128; 32x32 at
// head_dim 256 so that the per-thread O accumulator stays at 64 floats.
TS_HOST_DEVICE constexpr int fa1_block_m(int head_dim) { return head_dim >= 256 ? 32 : 64; }
TS_HOST_DEVICE constexpr int fa1_block_n(int head_dim) { return head_dim >= 256 ? 32 : 64; }

// FA-2: query rows per block x 64 keys per kv tile. At head dim 64 each warp owns 32 rows (two
// mma row blocks, so that every K and V fragment it loads feeds two mma): 128 rows a block; at 128
// the accumulators of two row blocks do not fit the registers, and a warp owns 16 rows: 64 a block.
// Measured: docs/perf.md, "FA-2 prefill on tensor cores".
TS_HOST_DEVICE constexpr int fa2_block_m(int head_dim) { return head_dim <= 64 ? 128 : 64; }
inline constexpr int kFa2BlockN = 64;

// Split-K partial: at most kSplitkMaxBlockM query rows per tile, fewer when seq_q is smaller,
// so that a decode step with seq_q = 1 computes one row, not idle ones. The Q, score and
// per-row tiles in shared memory (kernel_smem.h) and the reduce's per-thread arrays
// (splitk_reduce.cuh) are sized for it. A kv tile holds 8192 elements of K (16 KiB in bf16)
// whatever the head dim, a quarter of them for each warp (kernel_smem.h, splitk_warp_keys).
inline constexpr int kSplitkMaxBlockM = 8;
// Resident partial-kernel blocks per multiprocessor that the split heuristic assumes
// (kernels/tiling.h, choose_num_splits) and that the GPU launcher holds the partial kernel to
// whatever registers and shared memory a build allows (launch_gpu.cu, occupancy_matched_smem): a
// third block per SM, where they allowed one, made the decode grid slower, with the block-wide
// kernel before and with the warps' kernel now (docs/perf.md, "Split-K decode: warps on their own
// keys"). kernel_smem.h asserts that the shared memory allows this many.
inline constexpr int kSplitkBlocksPerSm = 2;
TS_HOST_DEVICE constexpr int splitk_block_n(int head_dim) { return 8192 / head_dim; }
TS_HOST_DEVICE constexpr int splitk_block_m(int64_t seq_q) {
  return seq_q < kSplitkMaxBlockM ? static_cast<int>(seq_q) : kSplitkMaxBlockM;
}

TS_HOST_DEVICE constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Half-open range of kv tiles.
struct KvTileRange {
  int32_t begin = 0;
  int32_t end = 0;
  TS_HOST_DEVICE constexpr bool empty() const { return end <= begin; }
  TS_HOST_DEVICE constexpr int32_t size() const { return end > begin ? end - begin : 0; }
};

// Valid query rows of a query tile (the last tile may be partial).
TS_HOST_DEVICE constexpr int32_t rows_in_q_tile(int64_t seq_q, int32_t block_m, int64_t q_tile) {
  const int64_t left = seq_q - q_tile * block_m;
  return static_cast<int32_t>(left < block_m ? left : block_m);
}

// Our kernels' mask: base/attention_rules.h's rule (the one definition of which keys a row sees)
// with one kv length for every batch entry and the diagonal aligned bottom-right: query row i's
// diagonal key is i + seq_kv - seq_q, for the causal mask and the sliding window alike. The
// kernels mask keys with it (AttentionParams::mask); the launch planner counts the tiles they
// visit with it (Tiling::mask()).
struct KernelMask {
  int64_t seq_q = 0, seq_kv = 0;
  bool causal = false;
  int64_t window_left = -1, window_right = -1;  // -1: unbounded

  TS_HOST_DEVICE constexpr int64_t diagonal(int64_t row) const { return row + seq_kv - seq_q; }
  // The keys query row `row` sees.
  TS_HOST_DEVICE constexpr KeySpan row_keys(int64_t row) const {
    return visible_key_span(diagonal(row), seq_kv, causal, window_left, window_right);
  }
  // The keys that some row of rows [first_row, first_row + rows) sees (rows >= 1).
  TS_HOST_DEVICE constexpr KeySpan rows_keys(int64_t first_row, int64_t rows) const {
    return rows_visible_key_span(diagonal(first_row), diagonal(first_row + rows - 1), seq_kv, causal,
                                 window_left, window_right);
  }
};

// The kv tiles holding a key that some row of query tile `q_tile` sees; {0, 0} when its rows see
// none. The correct kernels visit these and no other: every key of a tile outside is masked for
// every row of the query tile.
TS_HOST_DEVICE constexpr KvTileRange visible_kv_tiles(const KernelMask& mask, int32_t block_m,
                                                      int32_t block_n, int64_t q_tile) {
  const KeySpan keys = mask.rows_keys(q_tile * block_m, rows_in_q_tile(mask.seq_q, block_m, q_tile));
  if (keys.empty()) return {0, 0};
  return {static_cast<int32_t>(keys.begin / block_n), static_cast<int32_t>(ceil_div(keys.end, block_n))};
}

// The kv tiles of split `split`: [split * per_split, (split + 1) * per_split) clipped to the
// number of kv tiles. Trailing splits may be empty (when the split count does not divide the
// tiles evenly, or exceeds them); an empty split still owns a (begin = end) position.
TS_HOST_DEVICE constexpr KvTileRange split_kv_tile_range(int32_t split, int32_t per_split,
                                                         int32_t num_kv_tiles) {
  const int64_t begin = static_cast<int64_t>(split) * per_split;
  const int64_t end = begin + per_split;
  KvTileRange r;
  r.begin = static_cast<int32_t>(begin < num_kv_tiles ? begin : num_kv_tiles);
  r.end = static_cast<int32_t>(end < num_kv_tiles ? end : num_kv_tiles);
  return r;
}

// The kv tiles a Split-K partial block visits: the tiles of its split that its query tile sees
// (`visible`: visible_kv_tiles) — or all of its split's when the kernel does not guard against
// tiles with no visible key (the masked_nan fault). The kernel and the launch planner (which
// counts a block's per-tile events) both read it here.
TS_HOST_DEVICE constexpr KvTileRange splitk_visited_tiles(KvTileRange split, KvTileRange visible,
                                                          bool mask_guard) {
  if (!mask_guard) return split;
  KvTileRange r;
  r.begin = split.begin > visible.begin ? split.begin : visible.begin;
  r.end = split.end < visible.end ? split.end : visible.end;
  if (r.end < r.begin) r.end = r.begin;
  return r;
}

}  // namespace ts
