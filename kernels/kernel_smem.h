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


// Split-K partial (splitk_partial.cuh): each of a block's warps walks its own share of every kv
// tile, splitk_warp_keys consecutive keys, through a K and a V buffer of its own filled by
// cp.async (the next tile's K copied while this tile's P V runs, its V while the next tile's
// scores do), so that no warp waits on another within the kv loop. Byte offsets:
//   q          Q [bm][qkv_tile_ld] float, pre-scaled
//   key_begin, key_end   each row's first and end visible key [bm] int32
//   m, l       the block's state [bm] float, merged from the warps' (the events read them)
//   warp_state per warp: its m, l, alpha [bm] float, then its scores and its P [bm][warp keys] float each
//   kv         per warp: K then V [warp keys][splitk_tile_ld], input dtype; after the kv loop (and
//              for the traced build's per-tile events, once both are read) the two hold the
//              warp's O [bm][head_dim] float for the merge.
// Every part's size is a multiple of 16 bytes. K and V are kept in the input dtype, not as float:
// with float tiles the decode kernel ran well below the memory roof (docs/perf.md, "Split-K
// decode at the memory roof").
inline constexpr int kSplitkWarps = kKernelThreads / 32;
TS_HOST_DEVICE constexpr int splitk_warp_keys(int head_dim) { return splitk_block_n(head_dim) / kSplitkWarps; }
// The score step's lanes per (row, key): a warp's 32 lanes over its keys, each lane's share of the
// columns every score_parts-th 8-column chunk of the row.
TS_HOST_DEVICE constexpr int splitk_score_parts(int head_dim) {
  return splitk_warp_keys(head_dim) < 32 ? 32 / splitk_warp_keys(head_dim) : 1;
}
// Row stride of a K or V stage, elements of the input dtype: 16 bytes a score part longer than
// the row, so that the eight lanes of a quarter warp (8 / parts keys, parts lanes each) read
// sixteen bytes from eight different bank groups (splitk_score_reads_conflict_free). With 16
// bytes whatever the parts and each part's columns contiguous, as before, the parts of a key read
// the same bank group: two wavefronts a quarter at head dim 128, four at 256. Keeps 16-byte
// alignment.
TS_HOST_DEVICE constexpr int splitk_tile_ld(int head_dim, int elem_bytes) {
  return head_dim + 16 * splitk_score_parts(head_dim) / elem_bytes;
}
// The first column of score part `part`'s i-th chunk of 8 columns: a part's chunks are every
// parts-th of the row (chunk part, part + parts, ...), not a contiguous run of the row.
TS_HOST_DEVICE constexpr int splitk_chunk_col(int head_dim, int part, int i) {
  return (part + splitk_score_parts(head_dim) * i) * 8;
}
// Whether the score step's 16-byte reads of K from a stage (the lane of (key, part) at step
// `step` reading chunk i, 8 columns: one read in a 16-bit dtype, two in float32) fall, for each
// quarter warp, in eight different bank groups of 16 bytes: one wavefront a quarter.
constexpr bool splitk_score_reads_conflict_free(int head_dim, int elem_bytes) {
  const int parts = splitk_score_parts(head_dim), keys = splitk_warp_keys(head_dim);
  const int ld_bytes = splitk_tile_ld(head_dim, elem_bytes) * elem_bytes;
  for (int step = 0; step < keys * parts / 32; ++step)
    for (int i = 0; i < head_dim / parts / 8; ++i)
      for (int read = 0; read < 8 * elem_bytes / 16; ++read)
        for (int quarter = 0; quarter < 4; ++quarter) {
          int groups = 0;  // bit g: bank group g read by a lane of the quarter
          for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane) {
            const int e = lane + 32 * step, key = e / parts, part = e % parts;
            const int byte = key * ld_bytes + splitk_chunk_col(head_dim, part, i) * elem_bytes + 16 * read;
            const int group = byte % 128 / 16;
            if (groups & (1 << group)) return false;
            groups |= 1 << group;
          }
        }
  return true;
}
// Whether the Split-K partial runs its blocks on tensor cores (splitk_partial.cuh,
// decode_block_on_tensor_cores) rather than in SIMT steps: a decode (one query row a block:
// block_m 1), 16-bit inputs (the mma's operands), a head dim whose warp share of a kv tile is
// whole 16-key mma steps (32, 64 and 128, not 256: 8 keys a warp), and a build without a fault
// (the faults act on the SIMT steps: P through shared memory, one running max for the block).
// Such a run rounds P to the input dtype before P V, which its stage table declares
// (kernel_stage_table).
TS_HOST_DEVICE constexpr bool splitk_decode_on_tensor_cores(int head_dim, int elem_bytes, int block_m, bool faulty) {
  return block_m == 1 && elem_bytes == 2 && !faulty && head_dim % 16 == 0 && splitk_warp_keys(head_dim) % 16 == 0;
}
struct SplitkPartialSmem {
  int q, key_begin, key_end, m, l, warp_state, warp_state_bytes, kv, kv_bytes, total;
};
TS_HOST_DEVICE constexpr SplitkPartialSmem splitk_partial_smem(int head_dim, int elem_bytes) {
  const int bm = kSplitkMaxBlockM, kw = splitk_warp_keys(head_dim);
  SplitkPartialSmem s{};
  s.q = 0;
  s.key_begin = s.q + bm * qkv_tile_ld(head_dim) * 4;
  s.key_end = s.key_begin + bm * 4;
  s.m = s.key_end + bm * 4;
  s.l = s.m + bm * 4;
  s.warp_state = s.l + bm * 4;
  s.warp_state_bytes = (3 * bm + 2 * bm * kw) * 4;
  s.kv = s.warp_state + kSplitkWarps * s.warp_state_bytes;
  s.kv_bytes = 2 * kw * splitk_tile_ld(head_dim, elem_bytes) * elem_bytes;
  s.total = s.kv + kSplitkWarps * s.kv_bytes;
  return s;
}
TS_HOST_DEVICE constexpr int splitk_partial_smem_bytes(int head_dim, int elem_bytes) {
  return splitk_partial_smem(head_dim, elem_bytes).total;
}

// Shared memory per multiprocessor (CUDA's occupancy figures; each block also takes 1 KiB the
// runtime reserves): sm_80 (A100) and sm_90 (H100, H200).
inline constexpr int kSmemPerSmSm80 = 164 * 1024;
inline constexpr int kSmemPerSmSm90 = 228 * 1024;
inline constexpr int kSmemReservedPerBlock = 1024;
// Blocks of the Split-K partial an SM's shared memory holds at a head dim and input size.
TS_HOST_DEVICE constexpr int splitk_partial_blocks_fitting(int smem_per_sm, int head_dim, int elem_bytes) {
  return smem_per_sm / (splitk_partial_smem_bytes(head_dim, elem_bytes) + kSmemReservedPerBlock);
}
// Whether `blocks` partial blocks fit an SM at every head dim the kernel list builds Split-K for.
constexpr bool splitk_partial_blocks_fit(int blocks, int smem_per_sm, int elem_bytes) {
  for (const KernelBuild& b : kKernelBuilds)
    if (b.kernel == KernelKind::splitk && splitk_partial_blocks_fitting(smem_per_sm, b.head_dim, elem_bytes) < blocks)
      return false;
  return true;
}
// The split heuristic's kSplitkBlocksPerSm (tile_shapes.h) blocks of the partial kernel fit an
// sm_90 SM's shared memory (16-bit and float32 inputs) and an sm_80 SM's with 16-bit inputs; float32
// on an A100 fits one block, and there the heuristic counts more than run.
static_assert(splitk_partial_blocks_fit(kSplitkBlocksPerSm, kSmemPerSmSm90, 2) &&
                  splitk_partial_blocks_fit(kSplitkBlocksPerSm, kSmemPerSmSm90, 4) &&
                  splitk_partial_blocks_fit(kSplitkBlocksPerSm, kSmemPerSmSm80, 2),
              "kSplitkBlocksPerSm partial blocks no longer fit an SM's shared memory");
static_assert(splitk_partial_blocks_fit(1, kSmemPerSmSm80, 4), "a Split-K partial block no longer fits an SM's shared memory");

// The stage layout's reason holds for 16-bit inputs (the decode case) at every head dim built.
// (float32 at head dims 128 and 256 reads two chunks' halves in one bank group: two wavefronts a
// quarter, as before this layout, not checked.)
constexpr bool splitk_score_reads_conflict_free_16bit() {
  for (const KernelBuild& b : kKernelBuilds)
    if (b.kernel == KernelKind::splitk && !splitk_score_reads_conflict_free(b.head_dim, 2)) return false;
  return true;
}
static_assert(splitk_score_reads_conflict_free_16bit(),
              "the Split-K partial's score step reads K with bank conflicts (kernel_smem.h: splitk_tile_ld)");

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
