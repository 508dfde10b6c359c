// Tile shapes of the kernels and the tile arithmetic that the kernels, the launchers and the
// reference must agree on exactly (which kv tiles a query tile visits under causal masking,
// which kv tiles a split covers). Host and device code alike; no dependencies.
#pragma once

#include <cstdint>

#include "base/host_device.h"

namespace ts {

// Threads per block of every kernel (4 warps).
inline constexpr int kKernelThreads = 128;

// FA-1: query rows x keys per tile. Register tiles of 64x64 up to head_dim 128; 32x32 at
// head_dim 256 so that the per-thread O accumulator stays at 64 floats.
TS_HOST_DEVICE constexpr int fa1_block_m(int head_dim) { return head_dim >= 256 ? 32 : 64; }
TS_HOST_DEVICE constexpr int fa1_block_n(int head_dim) { return head_dim >= 256 ? 32 : 64; }

// Split-K partial: at most 8 query rows per tile (fewer when seq_q is smaller, so that a
// decode step with seq_q = 1 computes one row, not 7 idle ones; 8 rather than 16 keeps the
// head_dim 128 block at 74 KiB of shared memory and 168 registers, three blocks to an H100
// SM); a kv tile holds 8192 elements of K (16 KiB in bf16) whatever the head dim, to keep the
// bytes in flight per tile constant.
inline constexpr int kSplitkMaxBlockM = 8;
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

// One past the last kv tile that any row of the query tile can see. Without causal masking,
// every tile. With it (aligned bottom-right: query i sees keys j <= i + seq_kv - seq_q), the
// tiles up to the last row's limit; 0 when even the last row sees no key.
TS_HOST_DEVICE constexpr int32_t causal_kv_tile_end(int64_t seq_q, int64_t seq_kv, bool causal,
                                                    int32_t block_m, int32_t block_n,
                                                    int32_t num_kv_tiles, int64_t q_tile) {
  if (!causal) return num_kv_tiles;
  const int64_t last_row = q_tile * block_m + rows_in_q_tile(seq_q, block_m, q_tile) - 1;
  const int64_t last_key = last_row + seq_kv - seq_q;
  if (last_key < 0) return 0;
  const int64_t end = last_key / block_n + 1;
  return static_cast<int32_t>(end < num_kv_tiles ? end : num_kv_tiles);
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

// One past the last kv tile a Split-K partial block visits: its split's tiles up to the query
// tile's causal limit `causal_end` — or all of them when the kernel does not guard against
// tiles with no visible key (the masked_nan fault). The kernel and the launch planner (which
// counts a block's per-tile events) both read it here.
TS_HOST_DEVICE constexpr int32_t splitk_visit_end(KvTileRange range, int32_t causal_end,
                                                  bool causal_guard) {
  return causal_guard && causal_end < range.end ? causal_end : range.end;
}

}  // namespace ts
