// Split-K (flash-decoding) partial pass: each split of the kv tiles computes its own
// unnormalised attention state, which splitk_reduce.cuh then merges.
//
// What it computes: for every (batch, query head h), query row i and split s (kv tiles
// [s * per_split, (s + 1) * per_split) clipped to the run), with K and V of kv head
// h / (heads / heads_kv) (GQA/MQA), over the keys j of the split that row i sees:
//   s_j = scale * q_i . k_j,  then s_j = softcap * tanh(s_j / softcap) when softcap > 0,
//   m = max_j s_j,   l = sum_j exp(s_j - m),   O = sum_j exp(s_j - m) v_j   (NOT divided by l)
// into float32 partial buffers laid out [batch, heads, seq_q, num_splits, (head_dim)]. Row i
// sees key j when j < seq_kv, j <= d when causal, d - window_left <= j <= d + window_right (-1:
// unbounded), d = i + seq_kv - seq_q: base/attention_spec.h's semantics, the rule itself read
// from base/attention_rules.h through KernelMask (kernels/tile_shapes.h). A split that sees no
// key (empty, past the causal limit, outside the window) writes m = -inf, l = 0, O = 0. At one
// split with no reduce to run (params.partial_writes_output; kernels/launch_plan.h says when) it
// also writes the output O / l in the input dtype and LSE = m + log l, as the reduce would.
//
// How: one block of 128 threads per (query tile, split, query head, batch); grid
// (num_q_tiles * num_splits, heads, batch), split fastest. Its kv tiles are those of its split
// that its query tile sees (splitk_visited_tiles: tiles wholly outside the causal limit or the
// window are skipped); each row's visible keys are found once per block, so masking a score
// costs two compares whatever the mask, and the softcap is a uniform branch (not taken without
// one). Designed for the memory-bound decode case (seq_q = 1, long kv): a query tile has at most
// kSplitkMaxBlockM rows and only as many as the queries (splitk_block_m, kernels/tile_shapes.h).
// Each of the block's four warps walks its own share of every kv tile (splitk_warp_keys
// consecutive keys: 16 of the 64 at head dim 128) with its own online-softmax state over them,
// and its K and V rows are copied by cp.async (16 bytes a lane, through L1) into a K and a V
// buffer of its own, the next tile's K in flight during this tile's softmax and P V and its V
// during the next tile's scores (FA-2's order; in a ring of two K+V stages it ran 1% slower): no warp waits on
// another within the kv loop, whose only barriers are __syncwarp. Per tile and warp: S = Q K^T
// (32 / warp keys lanes per (row, key), each over every such chunk of 8 columns, summed by
// shuffles; a decode row's Q held in registers), the online softmax (a lane per key),
// O = alpha * O + P V (a lane's head_dim / 32 columns of every row). After the loop the warps'
// states are merged (softmax_math.cuh's merge_state, the reduce's merge). The loop is compiled
// for one query row and for up to kSplitkMaxBlockM rows. Why this shape, and what it replaced
// (a block-wide tile, four barriers a tile): docs/perf.md, "Split-K decode: warps on their own
// keys". A decode (one query row a block) in a 16-bit dtype at head dims 32-128, in a build
// without a fault, runs the same tiling, copies and order with S = Q K^T and P V on tensor cores
// (decode_block_on_tensor_cores below; splitk_decode_on_tensor_cores, kernel_smem.h, says when):
// P is then rounded to the input dtype before P V, as the run's stage table declares.
//
// Variants (template KernelVariant): plain (no probes), traced (kernels/kernel_stages.h: with
// params.tile_events a `splitk.tile` event after each kv tile the block visits, the running state
// over the split's keys up to that tile's end (the warps' states merged); and a `splitk.partial` event per block at the end
// of its split, m, l and unnormalised O over the split's keys as written to the partial buffers;
// events name the kv head read), faulty (probes + the fault in params.fault):
//   masked_nan        the split visits every tile, also those past the causal limit or outside
//                     the window, with no guard for a row that has seen no key:
//                     exp(-inf - -inf) = NaN;
//   empty_split       a split with no kv tile returns without writing its state, so the
//                     reduce reads the launcher's NaN poison;
//   stale_accumulator the P V accumulator of a tile is not cleared before the next tile;
//   missing_barrier   no barrier between the softmax's stores of P and the P V step's reads of
//                     them (a read-after-write race between a warp's lanes; K and V,
//                     filled by cp.async, land only at a wait, so a race on them could not show
//                     on the CPU).
//
// Run it: `tilescope capture --kernel splitk [--heads 32 --heads-kv 8] [--causal] [--window L,R]
// [--softcap X] ...`, or ts::launch_attention (kernels/launcher.h) with config.kernel =
// KernelKind::splitk; tests in tests/kernels/.
#pragma once

#include <type_traits>

#include "instrumentation/simt/cuda_compat.h"
#include "kernels/device/unroll.cuh"
#include "instrumentation/simt/tensor_core.h"
#include "tilescope/probe.h"
#include "kernels/attention_params.h"
#include "kernels/device/block_records.cuh"
#include "kernels/device/kernel_traits.cuh"
#include "kernels/device/mma_ops.cuh"
#include "kernels/device/smem_vec.cuh"
#include "kernels/device/softmax_math.cuh"
#include "kernels/device/tile_loader.cuh"
#include "kernels/device/vec_io.cuh"
#include "kernels/kernel_smem.h"
#include "kernels/tile_shapes.h"

namespace ts {

namespace splitk_detail {

// See fa1_forward.cuh: the faulty build's separately kept tile product (stale_accumulator).
template <bool kFaulty, int kN>
struct TileProduct {
  __device__ __forceinline__ float& at(int) { return dummy; }
  float dummy;
};
template <int kN>
struct TileProduct<true, kN> {
  __device__ __forceinline__ float& at(int i) { return v[i]; }
  float v[kN] = {};
};

// A block's coordinates, from its index: computed from blockIdx where the kernel starts, and
// again from EventSite::here() where the traced build writes its event, so that no value of
// the event is held through the main loop (see tilescope/probe.h).
struct PartialBlock {
  int q_tile, split, head, kv_head, batch, rows;
  int64_t q0;
  KvTileRange range;  // the split's kv tiles

  __device__ __forceinline__ static PartialBlock at(const uint3& block_idx,
                                                    const AttentionParams& p) {
    PartialBlock b;
    b.q_tile = static_cast<int>(block_idx.x) / p.num_splits;
    b.split = static_cast<int>(block_idx.x) % p.num_splits;
    b.head = static_cast<int>(block_idx.y);
    b.kv_head = kv_head_of<int>(b.head, p.heads, p.heads_kv);
    b.batch = static_cast<int>(block_idx.z);
    b.rows = rows_in_q_tile(p.seq_q, p.block_m, b.q_tile);
    b.q0 = static_cast<int64_t>(b.q_tile) * p.block_m;
    b.range = split_kv_tile_range(b.split, p.kv_tiles_per_split, p.num_kv_tiles);
    return b;
  }
  // Buffer row of (query q0, this split): one row per (query, split).
  __device__ __forceinline__ int64_t first_buffer_row(const AttentionParams& p) const {
    return ((static_cast<int64_t>(batch) * p.heads + head) * p.seq_q + q0) * p.num_splits + split;
  }
  // The block's first query row, and its kv head's first key and value rows.
  template <typename T>
  __device__ __forceinline__ const T* q_rows(const AttentionParams& p) const {
    return static_cast<const T*>(p.q) + batch * p.q_batch_stride + head * p.q_head_stride + q0 * p.q_row_stride;
  }
  template <typename T>
  __device__ __forceinline__ const T* k_rows(const AttentionParams& p) const {
    return static_cast<const T*>(p.k) + batch * p.k_batch_stride + kv_head * p.k_head_stride;
  }
  template <typename T>
  __device__ __forceinline__ const T* v_rows(const AttentionParams& p) const {
    return static_cast<const T*>(p.v) + batch * p.v_batch_stride + kv_head * p.v_head_stride;
  }
};

// The traced build's `splitk.partial` event, written after the split's state: its payload is
// read back from what each thread has just written (the partial buffers, same thread, same
// elements; m and l from shared memory), so it holds what the reduce will read. Not inlined: it
// stays out of the recording kernel's registers for its kv loop (inline, when the traced build
// was one kernel, it changed that loop's registers; docs/perf.md, "Instrumented kernels with
// tracing off"). `p` is the kernel's __grid_constant__ parameter: passed by reference without a
// copy to local memory. `step` is the event's place in the block's order: after the block's
// `splitk.tile` events.
template <int kD>
__device__ __noinline__ void record_split_state(const AttentionParams& p, const float* m_s,
                                                const float* l_s, int step) {
  const tilescope::EventSite site = tilescope::EventSite::here();
  const tilescope::Event event = tilescope::BlockProbe<true>(p.trace, site.block_linear())
                                     .open(p.trace, kSplitkPartialStage, 0);
  if (!event) return;
  const PartialBlock b = PartialBlock::at(site.block, p);
  const int64_t row0 = b.first_buffer_row(p);
  for (int e = site.thread; e < b.rows * kD; e += kKernelThreads) {
    const int r = e / kD, c = e % kD;
    event.o_row(r)[c] = p.partial_o[(row0 + static_cast<int64_t>(r) * p.num_splits) * kD + c];
  }
  for (int r = site.thread; r < b.rows; r += kKernelThreads) {
    event.m()[r] = m_s[r];
    event.l()[r] = l_s[r];
  }
  if (site.thread == 0)
    event.commit(device::state_header(kSplitkPartialStage, 0, b.batch, b.head, b.kv_head, b.q0, b.rows,
                                      device::tile_key(b.range.begin, p.block_n, p.seq_kv),
                                      device::tile_key(b.range.end, p.block_n, p.seq_kv),
                                      b.split, step, site.block_linear()));
}

// A block's shared memory, carved as kernel_smem.h's splitk_partial_smem lays it out, and the
// merge of its warps' states: each warp holds (m, l, O) over its own share of the keys so far;
// the block's state is their log-sum-exp merge (softmax_math.cuh's merge_state, as the reduce
// merges splits), warp 0 first.
template <typename T, int kD>
struct PartialSmem {
  static constexpr SplitkPartialSmem kLayout = splitk_partial_smem(kD, static_cast<int>(sizeof(T)));
  static constexpr int kWarpKeys = splitk_warp_keys(kD);
  static constexpr int kBM = kSplitkMaxBlockM;
  char* base;

  __device__ __forceinline__ float* q() const { return reinterpret_cast<float*>(base + kLayout.q); }
  __device__ __forceinline__ int* key_begin() const { return reinterpret_cast<int*>(base + kLayout.key_begin); }
  __device__ __forceinline__ int* key_end() const { return reinterpret_cast<int*>(base + kLayout.key_end); }
  __device__ __forceinline__ float* m() const { return reinterpret_cast<float*>(base + kLayout.m); }
  __device__ __forceinline__ float* l() const { return reinterpret_cast<float*>(base + kLayout.l); }
  __device__ __forceinline__ float* warp_m(int w) const {
    return reinterpret_cast<float*>(base + kLayout.warp_state + w * kLayout.warp_state_bytes);
  }
  __device__ __forceinline__ float* warp_l(int w) const { return warp_m(w) + kBM; }
  __device__ __forceinline__ float* warp_alpha(int w) const { return warp_m(w) + 2 * kBM; }
  // Its scores and its P, [bm][warp keys] each: apart, so that P read before it is stored (the
  // missing_barrier fault) is the previous tile's P, not a score (a masked one is -inf).
  __device__ __forceinline__ float* warp_s(int w) const { return warp_m(w) + 3 * kBM; }
  __device__ __forceinline__ float* warp_p(int w) const { return warp_s(w) + kBM * kWarpKeys; }
  __device__ __forceinline__ T* k_tile(int w) const {  // [warp keys][splitk_tile_ld], then V's
    return reinterpret_cast<T*>(base + kLayout.kv + w * kLayout.kv_bytes);
  }
  __device__ __forceinline__ T* v_tile(int w) const { return k_tile(w) + kWarpKeys * splitk_tile_ld(kD, sizeof(T)); }
  // Warp w's O [bm][kD] for the merge, over its K and V once the warp has read them; or, for the
  // per-tile events of a decode on tensor cores (one row, its scores and P in registers), over its
  // score and P area, so that its K and V copies stay in flight through the event.
  __device__ __forceinline__ float* warp_o(int w, bool over_scores = false) const {
    return over_scores ? warp_s(w) : reinterpret_cast<float*>(k_tile(w));
  }
  static_assert(kBM * kD * 4 <= kLayout.kv_bytes, "a warp's K and V hold its O");

  // The block's state of row r, column c: the warps' states (O of each where warp_o puts it) merged.
  // Always guarded: a warp that has seen no key of the row holds (-inf, 0, 0), which the block's
  // state does not show (masked_nan acts in the softmax, as in a kernel with one state per block).
  __device__ __forceinline__ void merged(int r, int c, float& m_out, float& l_out, float& o_out,
                                         bool over_scores = false) const {
    float m_r = warp_m(0)[r], l_r = warp_l(0)[r], o_r = warp_o(0, over_scores)[r * kD + c];
    TS_UNROLL
    for (int w = 1; w < kSplitkWarps; ++w)
      device::merge_state(m_r, l_r, o_r, warp_m(w)[r], warp_l(w)[r], warp_o(w, over_scores)[r * kD + c], true,
                          false);
    m_out = m_r;
    l_out = l_r;
    o_out = o_r;
  }
};

// The traced build's `splitk.tile` event: the split's running state after kv tile `tile` (the
// `index`-th tile the block visits), the warps' states merged (their O where PartialSmem::warp_o
// puts it, over_scores or not).
template <typename T, int kD>
__device__ __noinline__ void record_tile_state(const AttentionParams& p, char* smem, int tile, int index,
                                               bool over_scores) {
  const PartialSmem<T, kD> sm{smem};
  const tilescope::EventSite site = tilescope::EventSite::here();
  const tilescope::Event event = tilescope::BlockProbe<true>(p.trace, site.block_linear())
                                     .open(p.trace, kSplitkTileStage, index);
  if (!event) return;
  const PartialBlock b = PartialBlock::at(site.block, p);
  for (int e = site.thread; e < b.rows * kD; e += kKernelThreads) {
    const int r = e / kD, c = e % kD;
    float m, l, o;
    sm.merged(r, c, m, l, o, over_scores);
    event.o_row(r)[c] = o;
    if (c == 0) {
      event.m()[r] = m;
      event.l()[r] = l;
    }
  }
  if (site.thread == 0)
    event.commit(device::state_header(kSplitkTileStage, 0, b.batch, b.head, b.kv_head, b.q0, b.rows,
                                      device::tile_key(b.range.begin, p.block_n, p.seq_kv),
                                      device::tile_key(tile + 1, p.block_n, p.seq_kv), b.split,
                                      index, site.block_linear()));
}

// A warp's rows of kv tile t of K or V (`src`, rows `stride` apart) into its buffer `dst`, rows
// kLd elements apart, as one commit group: 16-byte copies through L1, consecutive lanes on
// consecutive vectors of a row; keys past seq_kv are zero-filled (masked keys multiply zeros,
// never stale NaN). A tile at or past `end` (the visited tiles') commits an empty group, so that
// every wait counts the same groups.
template <typename T, int kD, int kLd>
__device__ __forceinline__ void copy_warp_rows(T* dst, const T* src, int64_t stride, int t, int end, int warp,
                                               int lane, int64_t seq_kv) {
  constexpr int kBN = splitk_block_n(kD), kKw = splitk_warp_keys(kD);
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));  // elements one cp.async moves
  constexpr int kRowVecs = kD / kVec;
  constexpr int kCopies = kKw * kRowVecs / 32;  // a lane's copies a tile
  static_assert(kCopies * 32 == kKw * kRowVecs, "a warp's rows are whole copies of its lanes");
  if (t < end) {
    const int64_t key0 = static_cast<int64_t>(t) * kBN + warp * kKw;
    TS_UNROLL
    for (int i = 0; i < kCopies; ++i) {
      const int e = lane + 32 * i;
      const int row = e / kRowVecs, col = (e % kRowVecs) * kVec;
      const int64_t key = key0 + row;
      const bool in = key < seq_kv;
      tc::cp_async_ca_zfill<16>(dst + row * kLd + col, src + (in ? key : 0) * stride + col, in ? 16u : 0u);
    }
  }
  tc::cp_async_commit_group();
}

// After the kv loop, every warp's state in shared memory (its m and l, its O over its K and V):
// the split's state, the warps' states merged, one buffer row per (query, split); at one split
// also the output, as the reduce would write it (splitk_reduce.cuh: merging one state into the
// empty one leaves it bit for bit, then O / l and LSE); then the traced build's `splitk.partial`
// event.
template <typename T, int kD, KernelVariant kVariant>
__device__ __forceinline__ void write_block_state(const AttentionParams& p, const PartialSmem<T, kD>& sm,
                                                  const PartialBlock& coords, int nrows, bool guard,
                                                  KvTileRange visited) {
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t row0 = coords.first_buffer_row(p);
  const bool write_output = p.partial_writes_output != 0;
  T* const o_out = static_cast<T*>(p.o) + coords.batch * p.o_batch_stride + coords.head * p.o_head_stride +
                   coords.q0 * p.o_row_stride;
  float* const lse_out = p.lse + (static_cast<int64_t>(coords.batch) * p.heads + coords.head) * p.seq_q + coords.q0;
  for (int e = tid; e < nrows * kD; e += kKernelThreads) {
    const int r = e / kD, c = e % kD;
    float m, l, o;
    sm.merged(r, c, m, l, o);
    const int64_t row = row0 + static_cast<int64_t>(r) * p.num_splits;
    p.partial_o[row * kD + c] = o;
    if (write_output) o_out[r * p.o_row_stride + c] = device::from_float<T>(device::normalise(o, l, guard));
    if (c == 0) {
      p.partial_m[row] = m;
      p.partial_l[row] = l;
      if (write_output) lse_out[r] = device::log_sum_exp(m, l, guard);
      sm.m()[r] = m;
      sm.l()[r] = l;
    }
  }
  // Everything above is the plain kernel; the event only reads what it wrote.
  if constexpr (device::VariantTraits<kVariant>::kTrace) {
    __syncthreads();  // m and l of every row are in shared memory
    record_split_state<kD>(p, sm.m(), sm.l(), p.tile_events != 0 ? visited.size() : 0);
  }
}

// The kernel's block for a decode row on tensor cores (splitk_decode_on_tensor_cores,
// kernel_smem.h, says when: one query row a block, 16-bit inputs, head dims 32-128, no fault):
// the SIMT block's tiling, copies and order (each warp its own keys of every kv tile through its
// own K and V buffers, the next tile's K copied during this tile's softmax and P V, its V during
// the next tile's scores), with the score and P V steps as mma.sync m16n8k16. The query row is
// row 0 of the A fragments (lanes 0-3 hold it; rows 1-15 are zero or ignored), so a warp's scores
// are the C fragments of its keys in groups of 8 (row 0: lanes 0-3, two keys each); the online
// softmax runs on them in registers (a quad's shuffles), and P, rounded to the input dtype (the
// mma's operand: the stage table declares it, p_rounded), becomes the A fragment of P V as in
// fa2_forward.cuh. K and V rows are kD + 8 elements apart in their buffers (within the SIMT
// layout's rows), so that the 8 rows an ldmatrix phase reads fall in 8 bank groups. Masks,
// softcap and the per-tile events as in the SIMT block; measured against it: docs/perf.md,
// "Split-K decode on tensor cores".
template <typename T, int kD, KernelVariant kVariant>
__device__ __forceinline__ void decode_block_on_tensor_cores(const AttentionParams& p) {
  using Traits = device::VariantTraits<kVariant>;
  using Smem = PartialSmem<T, kD>;
  constexpr int kBN = splitk_block_n(kD);
  constexpr int kKw = Smem::kWarpKeys;
  constexpr int kLd = kD + 8;  // elements between rows of a K or V buffer
  constexpr int kKeyBlocks = kKw / 8;  // the scores' n-blocks of 8 keys
  static_assert(kD <= 2 * kSplitkMaxBlockM * kKw, "a warp's score and P area holds its O row for the per-tile events");
  // Rows an odd number of 16-byte chunks apart: the 8 rows of an ldmatrix phase in 8 bank groups.
  static_assert(kLd <= splitk_tile_ld(kD, 2) && kKw % 16 == 0 && kD % 16 == 0 && kLd * 2 % 32 == 16,
                "decode on tensor cores: tile shape");

  TS_DYNAMIC_SHARED(float, smem_floats);
  const Smem sm{reinterpret_cast<char*>(smem_floats)};
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, group = lane / 4, quad_lane = lane % 4;
  const PartialBlock coords = PartialBlock::at(blockIdx, p);
  const KvTileRange visited =
      splitk_visited_tiles(coords.range, visible_kv_tiles(p.mask, p.block_m, kBN, coords.q_tile), true);
  const int64_t seq_kv = p.seq_kv, k_row_stride = p.k_row_stride, v_row_stride = p.v_row_stride;
  const float scale = p.scale, softcap_value = p.softcap, softcap_inv = p.softcap_inv;
  const bool softcap = softcap_value > 0.0f;
  const bool tile_events = Traits::kTrace && p.tile_events != 0 && p.trace.headers != nullptr;
  const T* q = coords.q_rows<T>(p);
  const T* k = coords.k_rows<T>(p);
  const T* v = coords.v_rows<T>(p);

  T* const k_st = sm.k_tile(warp);
  T* const v_st = sm.v_tile(warp);
  auto copy_rows = [&](int t, T* dst, const T* src, int64_t stride) {
    copy_warp_rows<T, kD, kLd>(dst, src, stride, t, visited.end, warp, lane, seq_kv);
  };
  copy_rows(visited.begin, k_st, k, k_row_stride);
  copy_rows(visited.begin, v_st, v, v_row_stride);

  // Q's A fragments, row 0 (the lanes of group 0; the other rows zero), from the input as it is:
  // the scale multiplies the scores.
  uint32_t qa[kD / 16][4];
  TS_UNROLL
  for (int kk = 0; kk < kD / 16; ++kk) {
    const T* qk = q + kk * 16 + 2 * quad_lane;
    qa[kk][0] = group == 0 ? tc::pack_halves(qk[0], qk[1]) : 0u;
    qa[kk][1] = 0u;
    qa[kk][2] = group == 0 ? tc::pack_halves(qk[8], qk[9]) : 0u;
    qa[kk][3] = 0u;
  }
  // The keys the row sees (KernelMask::row_keys); key indices fit int32 (config: seq_kv <= 2^30).
  const KeySpan keys = p.mask.row_keys(coords.q0);
  const int key_begin = static_cast<int>(keys.begin), key_end = static_cast<int>(keys.end);

  float o[kD / 8][4];  // the P V accumulators: row 0 in elements 0 and 1 of the lanes of group 0
  TS_UNROLL
  for (int n = 0; n < kD / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m = device::kNegInf, l = 0.0f;
  // The warp's state in shared memory, for the merge of the warps' states (PartialSmem::merged):
  // its O over its K and V after the loop, over its score area for a per-tile event.
  auto store_state = [&](bool over_scores) {
    float* o_w = sm.warp_o(warp, over_scores);
    if (group == 0) {
      TS_UNROLL
      for (int n = 0; n < kD / 8; ++n) {
        o_w[n * 8 + 2 * quad_lane] = o[n][0];
        o_w[n * 8 + 2 * quad_lane + 1] = o[n][1];
      }
    }
    if (lane == 0) {
      sm.warp_m(warp)[0] = m;
      sm.warp_l(warp)[0] = l;
    }
  };
  // The copies in flight: K of tile t, then V of tile t, as the loop starts tile t; K of t + 1
  // and V of t after the scores. Unlike the SIMT block's, a per-tile event here leaves them in
  // flight: it keeps the warps' O over their score areas, which this path does not use.
  auto wait_for_older = [&]() {
    tc::cp_async_wait_group<1>();
    __syncwarp();
  };
  const int mat = lane / 8, mat_row = lane % 8;  // ldmatrix: lane 8 mat + r passes row r of matrix mat
  for (int t = visited.begin; t < visited.end; ++t) {
    const int key0 = t * kBN + warp * kKw;
    wait_for_older();  // K of tile t

    // S = Q K^T: K's rows are keys, so the plain ldmatrix gives the col-major B operand; one x4
    // load is two n-blocks of 8 keys over 16 columns.
    float sc[kKeyBlocks][4];
    TS_UNROLL
    for (int n = 0; n < kKeyBlocks; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.0f;
    TS_UNROLL
    for (int kk = 0; kk < kD / 16; ++kk) {
      TS_UNROLL
      for (int h = 0; h < kKeyBlocks / 2; ++h) {
        uint32_t b[4];
        tc::ldmatrix<4>(b, k_st + (h * 16 + (mat >> 1) * 8 + mat_row) * kLd + kk * 16 + (mat & 1) * 8);
        device::mma(sc[2 * h], qa[kk], b[0], b[1], T{});
        device::mma(sc[2 * h + 1], qa[kk], b[2], b[3], T{});
      }
    }
    __syncwarp();  // every lane has read K
    copy_rows(t + 1, k_st, k, k_row_stride);  // during the softmax and P V

    // Online softmax of the row's scores: a lane's two keys of each n-block, the quad's shuffles.
    float x[2 * kKeyBlocks];
    float tile_max = device::kNegInf;
    TS_UNROLL
    for (int n = 0; n < kKeyBlocks; ++n) {
      TS_UNROLL
      for (int e = 0; e < 2; ++e) {
        float s = sc[n][e] * scale;
        if (softcap) s = device::softcap_score(s, softcap_value, softcap_inv);  // uniform branch
        const int key = key0 + n * 8 + 2 * quad_lane + e;
        x[2 * n + e] = key < key_begin || key >= key_end ? device::kNegInf : s;
        tile_max = fmaxf(tile_max, x[2 * n + e]);
      }
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float m_new = fmaxf(m, tile_max);
    const float shift = device::softmax_shift(m_new, true);
    const float alpha = expf(m - shift);
    float sum = 0.0f;
    TS_UNROLL
    for (int i = 0; i < 2 * kKeyBlocks; ++i) {
      x[i] = expf(x[i] - shift);
      sum += x[i];
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    l = l * alpha + sum;
    m = m_new;
    TS_UNROLL
    for (int n = 0; n < kD / 8; ++n) {
      o[n][0] *= alpha;
      o[n][1] *= alpha;
    }

    // O += P V: the C fragments of two n-blocks of P are the A fragment of one 16-key step; V's
    // rows are keys, so ldmatrix_trans gives the col-major B operand.
    wait_for_older();  // V of tile t
    TS_UNROLL
    for (int step = 0; step < kKw / 16; ++step) {
      const uint32_t pa[4] = {device::pack<T>(x[4 * step], x[4 * step + 1]), 0u,
                              device::pack<T>(x[4 * step + 2], x[4 * step + 3]), 0u};
      TS_UNROLL
      for (int dp = 0; dp < kD / 16; ++dp) {
        uint32_t b[4];
        tc::ldmatrix_trans<4>(b, v_st + (step * 16 + (mat & 1) * 8 + mat_row) * kLd + dp * 16 + (mat >> 1) * 8);
        device::mma(o[2 * dp], pa, b[0], b[1], T{});
        device::mma(o[2 * dp + 1], pa, b[2], b[3], T{});
      }
    }
    __syncwarp();  // every lane has read V
    if constexpr (Traits::kTrace) {
      if (tile_events) {
        store_state(true);
        __syncthreads();
        record_tile_state<T, kD>(p, sm.base, t, t - visited.begin, true);
        __syncthreads();  // every warp's state is read before the next tile's event writes it
      }
    }
    copy_rows(t + 1, v_st, v, v_row_stride);  // during the next tile's scores
  }
  tc::cp_async_wait_all();
  __syncwarp();
  store_state(false);
  __syncthreads();
  write_block_state<T, kD, kVariant>(p, sm, coords, 1, true, visited);
}

// One block's work (the kernel's, below); `p` is the kernel's __grid_constant__ parameter.
template <typename T, int kD, KernelVariant kVariant>
__device__ __forceinline__ void partial_block(const AttentionParams& p) {
  using Traits = device::VariantTraits<kVariant>;
  if constexpr (splitk_decode_on_tensor_cores(kD, static_cast<int>(sizeof(T)), 1, Traits::kFaulty)) {
    if (p.block_m == 1) {
      decode_block_on_tensor_cores<T, kD, kVariant>(p);
      return;
    }
  }
  using Smem = PartialSmem<T, kD>;
  constexpr int kBM = kSplitkMaxBlockM;  // tile capacity; p.block_m <= kBM rows are used
  constexpr int kBN = splitk_block_n(kD);
  constexpr int kKw = Smem::kWarpKeys;   // a warp's keys of each kv tile
  constexpr int kLD = qkv_tile_ld(kD);
  constexpr int kLK = splitk_tile_ld(kD, static_cast<int>(sizeof(T)));  // K and V rows, elements of T
  // Scores: kParts lanes per (row, key), each over kD / kParts columns (every kParts-th 8-column
  // chunk from its part's), summed by shuffles.
  constexpr int kParts = splitk_score_parts(kD);
  constexpr int kPartCols = kD / kParts;
  // The first column of a score part's i-th chunk of 8 (kernel_smem.h: its chunks interleaved with
  // the key's other parts', so that a quarter warp's reads of K fall in eight bank groups).
  constexpr auto chunk_col = [](int part, int i) { return splitk_chunk_col(kD, part, i); };
  constexpr int kScoreSteps = kKw * kParts / 32;  // per row
  constexpr int kKeysPerLane = (kKw + 31) / 32;   // softmax
  constexpr int kCols = kD / 32;                  // P V: a lane's columns
  static_assert(kScoreSteps * 32 == kKw * kParts &&
                    kPartCols % 16 == 0 && kCols * 32 == kD && kKw * kSplitkWarps == kBN,
                "tile shape");

  TS_DYNAMIC_SHARED(float, smem_floats);
  const Smem sm{reinterpret_cast<char*>(smem_floats)};
  float* q_s = sm.q();

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const splitk_detail::PartialBlock coords = splitk_detail::PartialBlock::at(blockIdx, p);
  const int q_tile = coords.q_tile, rows = coords.rows;
  const int64_t q0 = coords.q0;
  const bool guard = !Traits::has(p, Fault::masked_nan);
  const bool stale = Traits::has(p, Fault::stale_accumulator);
  const bool p_barrier = !Traits::has(p, Fault::missing_barrier);

  if (Traits::has(p, Fault::empty_split) && coords.range.empty()) return;  // the bug: state never written
  // The split's tiles that some row of the query tile sees; tiles outside the causal limit or the
  // window hold no visible key and are skipped, unless masked_nan.
  const KvTileRange visited =
      splitk_visited_tiles(coords.range, visible_kv_tiles(p.mask, p.block_m, kBN, q_tile), guard);
  // The params the kv loop reads, held in registers (they were for a traced block compiled as a
  // called function, where `p` is a generic reference, re-read from memory after every cp.async
  // and barrier, their asm clobbering memory); a kernel reads them from the constant bank either way.
  const int64_t seq_kv = p.seq_kv, k_row_stride = p.k_row_stride, v_row_stride = p.v_row_stride;
  const float softcap_value = p.softcap, softcap_inv = p.softcap_inv;
  const bool softcap = softcap_value > 0.0f;
  const bool tile_events = Traits::kTrace && p.tile_events != 0 && p.trace.headers != nullptr;

  const T* q = coords.q_rows<T>(p);
  const T* k = coords.k_rows<T>(p);
  const T* v = coords.v_rows<T>(p);

  T* const k_st = sm.k_tile(warp);
  T* const v_st = sm.v_tile(warp);
  auto copy_rows = [&](int t, T* dst, const T* src, int64_t stride) {
    copy_warp_rows<T, kD, kLK>(dst, src, stride, t, visited.end, warp, lane, seq_kv);
  };
  // The first tile's copies fly while Q is loaded.
  copy_rows(visited.begin, k_st, k, k_row_stride);
  copy_rows(visited.begin, v_st, v, v_row_stride);

  device::load_tile<T, kD, kBM, kKernelThreads, kLD>(q, p.q_row_stride, rows, q_s, tid, p.scale);
  // The keys each query row sees (KernelMask::row_keys: causal, window, seq_kv), found once per
  // block; the score step masks with them. Key indices fit int32 (config: seq_kv <= 2^30).
  for (int r = tid; r < kBM; r += kKernelThreads) {
    const KeySpan keys = p.mask.row_keys(q0 + r);
    sm.key_begin()[r] = static_cast<int>(keys.begin);
    sm.key_end()[r] = static_cast<int>(keys.end);
  }
  float* m_w = sm.warp_m(warp);
  float* l_w = sm.warp_l(warp);
  float* alpha_w = sm.warp_alpha(warp);
  float* s_w = sm.warp_s(warp);
  float* p_w = sm.warp_p(warp);
  if (lane < kBM) {
    m_w[lane] = device::kNegInf;
    l_w[lane] = 0.0f;
  }
  for (int i = lane; i < kBM * kKw; i += 32) p_w[i] = 0.0f;
  __syncthreads();

  // The kv loop and the merge, compiled for one query row (decode) and for up to kBM rows: with
  // the row count a constant, the decode's loop carries no per-row guards.
  auto run = [&](auto rows_c) {
    constexpr int kR = decltype(rows_c)::value;
    const int nrows = kR == 1 ? 1 : rows;
    float acc[kR][kCols];
    TS_UNROLL
    for (int r = 0; r < kR; ++r) {
      TS_UNROLL
      for (int c = 0; c < kCols; ++c) acc[r][c] = 0.0f;
    }
    splitk_detail::TileProduct<Traits::kFaulty, kR * kCols> tile_pv;
    // Decode (one row): the lane's Q columns held in registers through the kv loop (its chunks,
    // as the score step reads them), not re-read from shared memory at every tile.
    constexpr int kQRegs = kR == 1 ? kPartCols : 1;
    float q_reg[kQRegs];
    if constexpr (kR == 1) {
      const int part = lane % kParts;
      TS_UNROLL
      for (int i = 0; i < kPartCols / 8; ++i) {
        const float4 a = device::load_f4(q_s + chunk_col(part, i));
        const float4 b = device::load_f4(q_s + chunk_col(part, i) + 4);
        q_reg[i * 8 + 0] = a.x; q_reg[i * 8 + 1] = a.y; q_reg[i * 8 + 2] = a.z; q_reg[i * 8 + 3] = a.w;
        q_reg[i * 8 + 4] = b.x; q_reg[i * 8 + 5] = b.y; q_reg[i * 8 + 6] = b.z; q_reg[i * 8 + 7] = b.w;
      }
    }
    auto q_f4 = [&](const float* qr, int i, int half) {  // columns of chunk i (0..), half 0 or 1
      if constexpr (kR == 1)
        return make_float4(q_reg[i * 8 + half * 4], q_reg[i * 8 + half * 4 + 1], q_reg[i * 8 + half * 4 + 2],
                           q_reg[i * 8 + half * 4 + 3]);
      else
        return device::load_f4(qr + chunk_col(lane % kParts, i) + half * 4);
    };
    // This warp's O over its K and V, for the merge of the warps' states.
    auto store_o = [&]() {
      float* o_w = sm.warp_o(warp);
      TS_UNROLL
      for (int r = 0; r < kR; ++r)
        if (r < nrows) {
          TS_UNROLL
          for (int c = 0; c < kCols; ++c) o_w[r * kD + lane * kCols + c] = acc[r][c];
        }
    };

    // The copies in flight: K of tile t, then V of tile t, as the loop starts tile t; K of t + 1
    // and V of t after the scores. A block that records per-tile events waits for all (its events
    // use K and V for the warps' O, so it copies the next tile only after them).
    auto wait_for_older = [&]() {
      if (tile_events)
        tc::cp_async_wait_all();
      else
        tc::cp_async_wait_group<1>();
      __syncwarp();  // every lane's copies have landed
    };
    for (int t = visited.begin; t < visited.end; ++t) {
      const int key0 = t * kBN + warp * kKw;
      wait_for_older();  // K of tile t

      // S = Q K^T over this warp's keys: kParts lanes per (row, key), summed by shuffles.
      for (int r = 0; r < nrows; ++r) {
        TS_UNROLL
        for (int step = 0; step < kScoreSteps; ++step) {
          const int e = lane + 32 * step;
          const int j = e / kParts, part = e % kParts;
          // Four independent sums: one chain of dependent FMAs would wait on FMA latency.
          const float* qr = q_s + r * kLD;
          const T* kr = k_st + j * kLK;
          float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
          TS_UNROLL
          for (int i = 0; i < kPartCols / 8; i += 2) {
            const int c0 = chunk_col(part, i), c1 = chunk_col(part, i + 1);
            float kf[16];
            device::raw8_to_float(device::load_raw8(kr + c0), kf);
            device::raw8_to_float(device::load_raw8(kr + c1), kf + 8);
            s0 = device::dot4(q_f4(qr, i, 0), make_float4(kf[0], kf[1], kf[2], kf[3]), s0);
            s1 = device::dot4(q_f4(qr, i, 1), make_float4(kf[4], kf[5], kf[6], kf[7]), s1);
            s2 = device::dot4(q_f4(qr, i + 1, 0), make_float4(kf[8], kf[9], kf[10], kf[11]), s2);
            s3 = device::dot4(q_f4(qr, i + 1, 1), make_float4(kf[12], kf[13], kf[14], kf[15]), s3);
          }
          float sc = (s0 + s1) + (s2 + s3);
          TS_UNROLL
          for (int off = 1; off < kParts; off *= 2) sc += __shfl_xor_sync(0xffffffffu, sc, off);
          if (softcap) sc = device::softcap_score(sc, softcap_value, softcap_inv);  // uniform branch
          const int key = key0 + j;
          const bool masked = key < sm.key_begin()[r] || key >= sm.key_end()[r];
          if (part == 0) s_w[r * kKw + j] = masked ? device::kNegInf : sc;
        }
      }
      __syncwarp();  // the scores are stored, every lane has read K
      if (!tile_events) copy_rows(t + 1, k_st, k, k_row_stride);  // during the softmax and P V
      // V of tile t, waited for before the softmax: the softmax's stores of P and P V's reads
      // are ordered by the barrier below alone (what missing_barrier leaves out).
      wait_for_older();

      // Online softmax of this warp's keys, row by row: lanes hold keys lane + 32 x. P is stored
      // after the sums' shuffles, so the barrier below is what orders it before P V's reads.
      for (int r = 0; r < nrows; ++r) {
        const float* srow = s_w + r * kKw;
        float* prow = p_w + r * kKw;
        const float m_old = m_w[r], l_old = l_w[r];
        float sv[kKeysPerLane];
        float tile_max = device::kNegInf;
        TS_UNROLL
        for (int x = 0; x < kKeysPerLane; ++x) {
          const int j = lane + 32 * x;
          sv[x] = j < kKw ? srow[j] : device::kNegInf;
          tile_max = fmaxf(tile_max, sv[x]);
        }
        TS_UNROLL
        for (int off = 16; off > 0; off /= 2)
          tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
        if constexpr (Traits::kFaulty) {
          // The faulty build keeps one running max for the block, exchanged at every tile, so that
          // each fault acts on the state a kernel with one state per block would have (the stale
          // products, the unguarded shift of a row the block has not seen a key of): with a max of
          // its own, each warp would show them at its own share of the keys.
          if (lane == 0) alpha_w[r] = tile_max;
          __syncthreads();
          TS_UNROLL
          for (int w = 0; w < kSplitkWarps; ++w) tile_max = fmaxf(tile_max, sm.warp_alpha(w)[r]);
          __syncthreads();
        }
        const float m_new = fmaxf(m_old, tile_max);
        const float shift = device::softmax_shift(m_new, guard);
        const float alpha = expf(m_old - shift);
        float sum = 0.0f;
        TS_UNROLL
        for (int x = 0; x < kKeysPerLane; ++x) {
          sv[x] = lane + 32 * x < kKw ? expf(sv[x] - shift) : 0.0f;
          sum += sv[x];
        }
        TS_UNROLL
        for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        __syncwarp();  // every lane has read m_w[r], l_w[r] before lane 0 overwrites them
        TS_UNROLL
        for (int x = 0; x < kKeysPerLane; ++x)
          if (lane + 32 * x < kKw) prow[lane + 32 * x] = sv[x];
        if (lane == 0) {
          m_w[r] = m_new;
          l_w[r] = l_old * alpha + sum;
          alpha_w[r] = alpha;
        }
      }
      if (p_barrier) __syncwarp();  // missing_barrier: without it, lanes read other lanes' scores, not P

      // O = alpha * O + P V: a lane's kCols columns of every row.
      float alpha_r[kR];
      TS_UNROLL
      for (int r = 0; r < kR; ++r) alpha_r[r] = r < nrows ? alpha_w[r] : 1.0f;
      float pv[kR][kCols];
      TS_UNROLL
      for (int r = 0; r < kR; ++r) {
        TS_UNROLL
        for (int c = 0; c < kCols; ++c) pv[r][c] = 0.0f;
      }
      TS_UNROLL_N(4)
      for (int j = 0; j < kKw; ++j) {
        float vf[kCols];
        device::load_floats<T, kCols>(v_st + j * kLK + lane * kCols, vf);
        TS_UNROLL
        for (int r = 0; r < kR; ++r) {
          if (r < nrows) {
            const float pr = p_w[r * kKw + j];
            TS_UNROLL
            for (int c = 0; c < kCols; ++c) pv[r][c] = pr * vf[c] + pv[r][c];
          }
        }
      }
      TS_UNROLL
      for (int r = 0; r < kR; ++r) {
        TS_UNROLL
        for (int c = 0; c < kCols; ++c) {
          float add = pv[r][c];
          if constexpr (Traits::kFaulty) {
            // stale_accumulator: the tile's product accumulates onto the previous tiles'.
            if (!stale) tile_pv.at(r * kCols + c) = 0.0f;
            tile_pv.at(r * kCols + c) += add;
            add = tile_pv.at(r * kCols + c);
          }
          acc[r][c] = acc[r][c] * alpha_r[r] + add;
        }
      }
      __syncwarp();  // every lane has read V and P before they are written again
      if constexpr (Traits::kTrace) {
        if (tile_events) {
          store_o();  // the block's state after this tile: each warp's O over its K and V
          __syncthreads();
          record_tile_state<T, kD>(p, sm.base, t, t - visited.begin, false);
          __syncthreads();
          copy_rows(t + 1, k_st, k, k_row_stride);
        }
      }
      copy_rows(t + 1, v_st, v, v_row_stride);  // during the next tile's scores
    }

    // The split's state, unnormalised: the warps' states merged, one buffer row per (query, split).
    tc::cp_async_wait_all();
    __syncwarp();
    store_o();
    __syncthreads();
    write_block_state<T, kD, kVariant>(p, sm, coords, nrows, guard, visited);
  };
  if (rows == 1)
    run(std::integral_constant<int, 1>{});
  else
    run(std::integral_constant<int, kBM>{});
}

}  // namespace splitk_detail

// The traced build is two kernels, as FA-2's is (fa2_forward.cuh's fa2_forward_kernel says why;
// here the per-tile event's call and its branch in the same kernel made the traced kv loop 45
// instructions longer than the plain one at head dim 128, sm_90a, and the decode 5% slower on an
// H200): this traced entry runs the blocks that record nothing, with the plain build's code,
// splitk_partial_recording_blocks_kernel the others.
template <typename T, int kD, KernelVariant kVariant>
// At least kSplitkBlocksPerSm blocks an SM, what the launcher holds the partial to: without it
// ptxas held the plain build to 168 registers on sm_80 (three blocks' worth) and spilled.
__global__ void __launch_bounds__(kKernelThreads, kSplitkBlocksPerSm)
    splitk_partial_kernel(const __grid_constant__ AttentionParams p) {
  if constexpr (kVariant == KernelVariant::traced) {
    if (device::block_records_any(p, kSplitkTileStage, kSplitkPartialStage)) return;
    splitk_detail::partial_block<T, kD, KernelVariant::plain>(p);
  } else {
    splitk_detail::partial_block<T, kD, kVariant>(p);
  }
}

// The traced build's blocks that record an event (the traced entry above runs the others).
template <typename T, int kD>
__global__ void __launch_bounds__(kKernelThreads, kSplitkBlocksPerSm)
    splitk_partial_recording_blocks_kernel(const __grid_constant__ AttentionParams p) {
  if (!device::block_records_any(p, kSplitkTileStage, kSplitkPartialStage)) return;
  splitk_detail::partial_block<T, kD, KernelVariant::traced>(p);
}

}  // namespace ts
