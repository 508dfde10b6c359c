// The naive same-precision baselines of the correctness rule (tolerance.h), one query tile at a
// time: kernels/naive_attention.h (the textbook formula as PyTorch computes it) run on the
// tile's query rows, in float32 and in the input dtype, and its error against the float64
// reference. Tile by tile so that the analysis computes it in parallel, beside the comparison,
// and only for the tiles a trace holds.
#pragma once

#include <cstdint>

#include "app/model/analysis/tolerance.h"
#include "kernels/attention_inputs.h"
#include "kernels/reference.h"
#include "kernels/tiling.h"

namespace ts {

// `config` and `inputs` are one (batch, head) pair's (batch = heads = 1); `reference` is the
// float64 reference of query tile `q_tile` under `tiling`.
NaiveErrors naive_tile_errors(const AttentionConfig& config, const AttentionInputs& inputs,
                              const Tiling& tiling, int64_t q_tile, const TileReference& reference);

// The larger of each figure.
NaiveErrors max_errors(const NaiveErrors& a, const NaiveErrors& b);

}  // namespace ts
