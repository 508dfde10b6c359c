// Shared-memory layouts of the kernels (FA-1 in floats, the Split-K partial in bytes), so that the kernels carve their dynamic
// shared memory and the launchers size it from the same numbers.
#pragma once

#include <cstddef>

#include "base/host_device.h"
#include "base/kernel_list.h"
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

// Split-K partial: Q [bm][ld] (float, pre-scaled), K and V [bn][raw ld] in the input dtype
// (converted as they are read), S/P [bm][bn + 8], m, l, alpha [bm], and each row's first and
// end visible key [bm] (int32). Every part's size is a multiple of 16 bytes. K and V are kept
// in the input dtype, not as float: with float tiles the decode kernel ran well below the
// memory roof, with these at cuDNN's speed (docs/perf.md, "Split-K decode at the memory roof",
// has the registers and timings measured).
// Row stride of a K or V tile held in the input dtype: +16 bytes keeps 16-byte alignment and
// moves consecutive key rows to different banks for the 16-byte reads of K.
TS_HOST_DEVICE constexpr int raw_tile_ld(int head_dim, int elem_bytes) { return head_dim + 16 / elem_bytes; }
TS_HOST_DEVICE constexpr int splitk_partial_smem_bytes(int head_dim, int elem_bytes) {
  const int bm = kSplitkMaxBlockM, bn = splitk_block_n(head_dim);
  const int floats = bm * qkv_tile_ld(head_dim) + bm * score_tile_ld(bn) + 3 * bm + 2 * bm;
  return floats * 4 + 2 * bn * raw_tile_ld(head_dim, elem_bytes) * elem_bytes;
}

// Shared memory per multiprocessor (CUDA's occupancy figures; each block also takes 1 KiB the
// runtime reserves): sm_80 (A100) and sm_90 (H100, H200).
inline constexpr int kSmemPerSmSm80 = 164 * 1024;
inline constexpr int kSmemPerSmSm90 = 228 * 1024;
inline constexpr int kSmemReservedPerBlock = 1024;
constexpr bool splitk_partial_blocks_fit(int smem_per_sm, int elem_bytes) {
  for (const KernelBuild& b : kKernelBuilds)
    if (b.kernel == KernelKind::splitk &&
        kSplitkBlocksPerSm * (splitk_partial_smem_bytes(b.head_dim, elem_bytes) + kSmemReservedPerBlock) > smem_per_sm)
      return false;
  return true;
}
// The split heuristic's kSplitkBlocksPerSm (tile_shapes.h) blocks of the partial kernel fit an
// SM's shared memory at every head dim the kernel list builds Split-K for: 16-bit inputs on both architectures, float32 inputs on
// sm_90 only (an A100's SM holds one float32 block at some head dims).
static_assert(splitk_partial_blocks_fit(kSmemPerSmSm80, 2) && splitk_partial_blocks_fit(kSmemPerSmSm90, 2),
              "kSplitkBlocksPerSm partial blocks no longer fit an SM's shared memory (16-bit inputs)");
static_assert(splitk_partial_blocks_fit(kSmemPerSmSm90, 4),
              "kSplitkBlocksPerSm partial blocks no longer fit an sm_90 SM's shared memory (float32 inputs)");

// FA-2: Q [bm][d], K and V [2][bn][d] (double-buffered), in the input dtype (16-bit); the faulty
// build adds the P V product of a tile, [bm][d] floats (each thread's bm * d / threads of them).
TS_HOST_DEVICE constexpr int fa2_smem_bytes(int head_dim, int elem_bytes, bool faulty) {
  return (fa2_block_m(head_dim) + 4 * kFa2BlockN) * head_dim * elem_bytes +
         (faulty ? fa2_block_m(head_dim) * head_dim * 4 : 0);
}

constexpr size_t fa1_smem_bytes(int head_dim) {
  return static_cast<size_t>(fa1_smem_floats(head_dim)) * sizeof(float);
}

}  // namespace ts
