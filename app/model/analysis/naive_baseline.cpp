#include "app/model/analysis/naive_baseline.h"

#include <algorithm>
#include <cstring>

#include "app/model/analysis/state_compare.h"
#include "kernels/naive_attention.h"

namespace ts {
namespace {

// Rows [first, first + count) of a [1, 1, seq, head_dim] tensor, optionally converted to float32
// (exact: every input dtype is a subset of float32).
HostTensor slice_rows(const HostTensor& t, int64_t first, int64_t count, bool to_f32) {
  const int64_t d = t.shape.back();
  HostTensor out;
  out.shape = {1, 1, count, d};
  if (to_f32 && t.dtype != DType::f32) {
    out.dtype = DType::f32;
    out.bytes.resize(static_cast<size_t>(count * d) * sizeof(float));
    float* dst = out.data_as<float>();
    for (int64_t i = 0; i < count * d; ++i) dst[i] = t.get_float(first * d + i);
    return out;
  }
  out.dtype = t.dtype;
  const size_t es = t.element_size();
  out.bytes.resize(static_cast<size_t>(count * d) * es);
  std::memcpy(out.bytes.data(), t.bytes.data() + static_cast<size_t>(first * d) * es, out.bytes.size());
  return out;
}

// One naive run over the tile's rows, and its error against the reference's final state.
void naive_error(const AttentionConfig& tile_config, const AttentionInputs& tile_inputs,
                 const RefState& want, double& o_err, double& lse_err) {
  const NaiveOutput naive = naive_attention(tile_config, tile_inputs, 1);
  const size_t d = static_cast<size_t>(want.head_dim);
  for (int32_t r = 0; r < want.rows; ++r) {
    lse_err = std::max(lse_err, value_error(naive.lse[static_cast<size_t>(r)], want.m[r]));
    for (size_t c = 0; c < d; ++c)
      o_err = std::max(o_err, value_error(naive.o.get_float(static_cast<int64_t>(r * d + c)), want.o[r * d + c]));
  }
}

}  // namespace

NaiveErrors naive_tile_errors(const AttentionConfig& config, const AttentionInputs& inputs,
                              const Tiling& tiling, int64_t q_tile, const TileReference& reference) {
  NaiveErrors e;
  const int64_t rows = tiling.rows_in_q_tile(q_tile);
  const int64_t q0 = q_tile * tiling.block_m;
  // The tile's rows as a problem of their own. Under causal masking (aligned bottom-right:
  // query i sees keys j <= i + seq_kv - seq_q) the keys are cut to the last row's limit, which
  // keeps every row's limit: row i' = i - q0 of the slice sees j <= i' + kv' - rows = the same.
  int64_t kv = config.seq_kv;
  if (config.causal) kv = std::min(config.seq_kv, q0 + rows + config.seq_kv - config.seq_q);
  if (kv <= 0) return e;  // no row sees a key: naive and reference both give O = 0, LSE = -inf

  AttentionConfig sub = config;
  sub.batch = sub.heads = 1;
  sub.seq_q = rows;
  sub.seq_kv = kv;
  sub.softmax_scale = config.effective_scale();
  sub.fault = Fault::none;
  sub.num_splits = 0;
  const RefState want = reference.final_output();

  AttentionInputs in32{slice_rows(inputs.q, q0, rows, true), slice_rows(inputs.k, 0, kv, true),
                       slice_rows(inputs.v, 0, kv, true)};
  AttentionConfig sub32 = sub;
  sub32.dtype = DType::f32;
  naive_error(sub32, in32, want, e.o_f32, e.lse_f32);
  if (config.dtype == DType::f32) {
    e.o_dtype = e.o_f32;
    e.lse_dtype = e.lse_f32;
  } else {
    AttentionInputs in{slice_rows(inputs.q, q0, rows, false), slice_rows(inputs.k, 0, kv, false),
                       slice_rows(inputs.v, 0, kv, false)};
    naive_error(sub, in, want, e.o_dtype, e.lse_dtype);
  }
  return e;
}

NaiveErrors max_errors(const NaiveErrors& a, const NaiveErrors& b) {
  return {std::max(a.o_f32, b.o_f32), std::max(a.lse_f32, b.lse_f32), std::max(a.o_dtype, b.o_dtype),
          std::max(a.lse_dtype, b.lse_dtype)};
}

}  // namespace ts
