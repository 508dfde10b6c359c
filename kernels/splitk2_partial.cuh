// Split-K 2 partial pass: Split-K's partial (splitk_partial.cuh) with FA-2's schedule on tensor
// cores (fa2_forward.cuh), for query tiles of many rows: prefill-like shapes split along the keys.
//
// What it computes: what splitk_partial.cuh computes (the same masks, GQA mapping, softcap; each
// split's unnormalised m, l and O over the keys of its kv tiles that a row sees, into the same
// float32 partial buffers [batch, heads, seq_q, num_splits, (head_dim)], which
// splitk_reduce.cuh merges), for 16-bit inputs, with P rounded to the input dtype before P V as
// FA-2 rounds it (the stages declare it: StageInfo::p_rounded).
//
// How: one block of 4 warps per (query tile, split, query head, batch); grid
// (num_q_tiles * num_splits, heads, batch), split fastest, as Split-K's. The query tiles and kv
// tiles are FA-2's (fa2_block_m rows, kFa2BlockN keys: kernels/tile_shapes.h), and the block runs
// FA-2's pass (fa2_detail::attend_kv_tiles) over the tiles of its split that its query tile sees
// (splitk_visited_tiles); it then stores the lanes' accumulators, m and l unnormalised, one
// buffer row per (query, split), instead of FA-2's O / l.
//
// Variants (KernelVariant): plain (no probes), traced (kernels/kernel_stages.h: with
// params.tile_events a `splitk2.tile` event after each kv tile the block visits, the running
// state over the split's keys up to that tile's end; a `splitk2.partial` event per block with
// m, l and O as written to the partial buffers), faulty (probes + params.fault):
//   masked_nan         the split visits every tile of its split, also those past the causal
//                      limit or outside the window, with no guard for a row that has seen no key;
//   empty_split        a split with no kv tile returns without writing its state, so the reduce
//                      reads the launcher's NaN poison;
//   per_tile_softmax, stale_accumulator  FA-2's (fa2_forward.cuh), within the split;
//   fragment_rows      the partial store exchanges each row block's accumulator halves: row r of
//                      every 16 gets row r xor 8's O (m and l stay right);
//   double_count_l, partial_layout  the reduce's (splitk_reduce.cuh).
// missing_barrier is not offered, for FA-2's reason.
//
// Run it: `tilescope capture --kernel splitk2 --dtype bf16 [--splits N] ...`, or
// ts::launch_attention (kernels/launcher.h) with config.kernel = KernelKind::splitk2; tests in
// tests/kernels/.
#pragma once

#include "kernels/fa2_forward.cuh"

namespace ts {

template <typename T, int kD, KernelVariant kVariant>
__global__ void __launch_bounds__(kKernelThreads, fa2_detail::kMinBlocksPerSm<kD>)
    splitk2_partial_kernel(const AttentionParams p) {
  using Traits = device::VariantTraits<kVariant>;
  using Shape = fa2_detail::WarpShape<kD>;
  constexpr int kBM = Shape::kBM, kBN = Shape::kBN;
  TS_DYNAMIC_SHARED(T, smem);
  const int tid = static_cast<int>(threadIdx.x);
  const int quad_lane = tid & 3;
  const int q_tile = static_cast<int>(blockIdx.x) / p.num_splits;
  const int split = static_cast<int>(blockIdx.x) % p.num_splits;
  const int head = static_cast<int>(blockIdx.y);
  const int batch = static_cast<int>(blockIdx.z);
  const int rows = rows_in_q_tile(p.seq_q, kBM, q_tile);
  const int64_t q0 = static_cast<int64_t>(q_tile) * kBM;
  const int kv_head = kv_head_of<int>(head, p.heads, p.heads_kv);
  const int64_t block = device::block_linear_index();
  const tilescope::BlockProbe<Traits::kTrace> probe(p.trace, block);
  const bool guard = !Traits::has(p, Fault::masked_nan);
  const bool exchange_rows = Traits::has(p, Fault::fragment_rows);

  const KvTileRange range = split_kv_tile_range(split, p.kv_tiles_per_split, p.num_kv_tiles);
  if (Traits::has(p, Fault::empty_split) && range.empty()) return;  // the bug: state never written
  const KvTileRange visited = splitk_visited_tiles(range, visible_kv_tiles(p.mask, kBM, kBN, q_tile), guard);
  const int64_t key_begin = device::tile_key(range.begin, kBN, p.seq_kv);
  fa2_detail::RowState<kD> st;
  fa2_detail::attend_kv_tiles<T, kD, kVariant>(p, smem, q_tile, head, batch, visited,
                                               {kSplitkTileStage, split, key_begin}, st);

  // The split's state, unnormalised, one buffer row per (query, split): two columns per lane and
  // n-tile, m and l from the quad's first lane.
  const tilescope::Event event = probe.open(p.trace, kSplitkPartialStage, 0);
  const int64_t row0 = ((static_cast<int64_t>(batch) * p.heads + head) * p.seq_q + q0) * p.num_splits + split;
  TS_UNROLL
  for (int f = 0; f < Shape::kMFrags; ++f)
    TS_UNROLL
    for (int h = 0; h < 2; ++h) {
      // fragment_rows: the values of half h are stored to the other half's row of the row block.
      const int r = fa2_detail::row_of<kD>(tid, f, exchange_rows ? 1 - h : h);
      if (r < rows) {
        float* orow = p.partial_o + (row0 + static_cast<int64_t>(r) * p.num_splits) * kD;
        TS_UNROLL
        for (int n = 0; n < Shape::kOTiles; ++n) {
          const int c = n * 8 + quad_lane * 2;
          orow[c] = st.o[f][n][2 * h];
          orow[c + 1] = st.o[f][n][2 * h + 1];
          if (event) {
            event.o_row(r)[c] = st.o[f][n][2 * h];
            event.o_row(r)[c + 1] = st.o[f][n][2 * h + 1];
          }
        }
      }
      const int state_r = fa2_detail::row_of<kD>(tid, f, h);
      if (state_r < rows && quad_lane == 0) {
        const int64_t buffer_row = row0 + static_cast<int64_t>(state_r) * p.num_splits;
        p.partial_m[buffer_row] = st.m[f][h];
        p.partial_l[buffer_row] = st.l[f][h];
        if (event) {
          event.m()[state_r] = st.m[f][h];
          event.l()[state_r] = st.l[f][h];
        }
      }
    }
  if (event && tid == 0)
    event.commit(device::state_header(kSplitkPartialStage, 0, batch, head, kv_head, q0, rows, key_begin,
                                      device::tile_key(range.end, kBN, p.seq_kv), split,
                                      p.tile_events != 0 ? visited.size() : 0, block));
}

}  // namespace ts
