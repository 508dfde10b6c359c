// The naive same-precision baselines of the correctness rule (tolerance.h), one query tile at a
// time, and their errors against the float64 reference:
//   - float32 textbook states (scores q . (k * scale) summed in order, max, exp, sums in order)
//     of each kv tile alone and of all keys: the yardstick of the intermediate stages;
//   - kernels/naive_attention.h (the textbook attention as PyTorch computes it) in the input
//     dtype on the tile's query rows: the yardstick of the final output (in float32 the
//     all-keys textbook state above is that already, and is used instead).
// Tile by tile so that the analysis computes it in parallel beside the comparison, and only
// for the tiles a trace holds.
#pragma once

#include <cstdint>
#include <vector>

#include "app/model/analysis/tolerance.h"
#include "base/attention_inputs.h"
#include "kernels/reference.h"
#include "kernels/tiling.h"

namespace ts {

// One (batch, head) pair's inputs as float32: q and v [seq, head_dim]; K multiplied by the
// softmax scale in float (as the textbook implementation does) and transposed to [head_dim,
// seq_kv] (kernels/naive_attention.h, scores_in_order); for fp16 / bf16 runs also K scaled and
// rounded to the dtype, as the input-dtype naive attention reads it. Converted once per pair,
// read by every tile.
struct PairFloats {
  std::vector<float> q, v, k_scaled_t;
  std::vector<float> k_rounded_t;  // empty for fp32 (k_scaled_t is that already)
};
PairFloats pair_floats(const AttentionConfig& config, const AttentionInputs& inputs);

// `config` and `floats` are one (batch, head) pair's (batch = heads = 1); `reference` is the
// float64 reference of query tile `q_tile` under `tiling`.
NaiveErrors naive_tile_errors(const AttentionConfig& config, const PairFloats& floats, const Tiling& tiling,
                              int64_t q_tile, const TileReference& reference);

// The larger of each figure.
NaiveErrors max_errors(const NaiveErrors& a, const NaiveErrors& b);

}  // namespace ts
