// Shared-memory layouts of the kernels, in floats, so that the kernels carve their dynamic
// shared memory and the launchers size it from the same numbers.
#pragma once

#include <cstddef>

#include "base/host_device.h"
#include "kernels/tile_shapes.h"

namespace ts {

// Row strides: +4 floats keeps 16-byte alignment and moves consecutive rows to different
// banks for the float4 reads of K; +8 does the same for the score tile's scalar accesses.
TS_HOST_DEVICE constexpr int qkv_tile_ld(int head_dim) { return head_dim + 4; }
TS_HOST_DEVICE constexpr int score_tile_ld(int block_n) { return block_n + 8; }

// FA-1: Q [bm][ld], K [bn][ld], V [bn][ld], S/P [bm][bn + 8], m, l, alpha [bm].
TS_HOST_DEVICE constexpr int fa1_smem_floats(int head_dim) {
  const int bm = fa1_block_m(head_dim), bn = fa1_block_n(head_dim), ld = qkv_tile_ld(head_dim);
  return bm * ld + 2 * bn * ld + bm * score_tile_ld(bn) + 3 * bm;
}

// Split-K partial: the same tiles with at most kSplitkMaxBlockM query rows, and each row's first
// and end visible key [bm] (int32).
TS_HOST_DEVICE constexpr int splitk_partial_smem_floats(int head_dim) {
  const int bm = kSplitkMaxBlockM, bn = splitk_block_n(head_dim), ld = qkv_tile_ld(head_dim);
  return bm * ld + 2 * bn * ld + bm * score_tile_ld(bn) + 3 * bm + 2 * bm;
}

constexpr size_t fa1_smem_bytes(int head_dim) {
  return static_cast<size_t>(fa1_smem_floats(head_dim)) * sizeof(float);
}
constexpr size_t splitk_partial_smem_bytes(int head_dim) {
  return static_cast<size_t>(splitk_partial_smem_floats(head_dim)) * sizeof(float);
}

}  // namespace ts
