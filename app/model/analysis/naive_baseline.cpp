#include "app/model/analysis/naive_baseline.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "app/model/analysis/state_compare.h"
#include "base/dtype_conversion.h"
#include "kernels/naive_attention.h"

namespace ts {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Unnormalised float32 states of the tile's rows: one per kv tile, and one over all keys.
struct F32States {
  int32_t rows = 0, d = 0, tiles = 0;
  std::vector<float> m, l, o;          // [tile][row], [tile][row], [tile][row][d]
  std::vector<float> all_m, all_l, all_o;  // [row], [row], [row][d]
};

// The textbook state of keys [begin, end) of one row: max, exp, sums, in order.
void row_state(const float* s, const float* v, int64_t begin, int64_t end, int32_t d, float& m, float& l, float* o) {
  m = kNegInf;
  l = 0.0f;
  std::fill(o, o + d, 0.0f);
  if (end <= begin) return;
  for (int64_t j = begin; j < end; ++j) m = std::max(m, s[j]);
  for (int64_t j = begin; j < end; ++j) {
    const float p = std::exp(s[j] - m);
    l += p;
    const float* vj = v + j * d;
    for (int32_t c = 0; c < d; ++c) o[c] += p * vj[c];
  }
}

F32States f32_states(const AttentionConfig& c, const PairFloats& f, const Tiling& t, int64_t q_tile) {
  F32States st;
  st.rows = t.rows_in_q_tile(q_tile);
  st.d = static_cast<int32_t>(c.head_dim);
  st.tiles = t.num_kv_tiles;
  const size_t rows = static_cast<size_t>(st.rows), d = static_cast<size_t>(st.d);
  st.m.resize(static_cast<size_t>(st.tiles) * rows);
  st.l.resize(st.m.size());
  st.o.resize(st.m.size() * d);
  st.all_m.resize(rows);
  st.all_l.resize(rows);
  st.all_o.resize(rows * d);
  std::vector<float> s(static_cast<size_t>(c.seq_kv));
  for (int32_t r = 0; r < st.rows; ++r) {
    const int64_t i = q_tile * t.block_m + r;
    const int64_t visible = c.causal ? std::clamp<int64_t>(i + c.seq_kv - c.seq_q + 1, 0, c.seq_kv) : c.seq_kv;
    scores_in_order(f.q.data() + i * st.d, f.k_scaled_t.data(), st.d, c.seq_kv, visible, s.data());
    for (int32_t tile = 0; tile < st.tiles; ++tile) {
      const size_t at = static_cast<size_t>(tile) * rows + static_cast<size_t>(r);
      const int64_t j0 = static_cast<int64_t>(tile) * t.block_n;
      row_state(s.data(), f.v.data(), j0, std::min<int64_t>(j0 + t.block_n, visible), st.d, st.m[at], st.l[at],
                st.o.data() + at * d);
    }
    row_state(s.data(), f.v.data(), 0, visible, st.d, st.all_m[static_cast<size_t>(r)], st.all_l[static_cast<size_t>(r)],
              st.all_o.data() + static_cast<size_t>(r) * d);
  }
  return st;
}

void add_state_errors(const TraceState& got, const RefState& want, NaiveErrors& e) {
  std::vector<RowError> rows(static_cast<size_t>(got.rows));
  compare_state(got, want, rows);
  for (const RowError& r : rows) {
    e.m_f32 = std::max<double>(e.m_f32, r.m_err);
    e.l_rel_f32 = std::max<double>(e.l_rel_f32, r.l_err == 0 ? 0.0 : static_cast<double>(r.l_err) / r.l_ref);
    e.o_norm_f32 = std::max<double>(e.o_norm_f32, r.o_norm_err);
  }
}

// The input-dtype naive attention (kernels/naive_attention.h) on the tile's rows, against the
// reference's output.
void dtype_errors(const AttentionConfig& config, const PairFloats& floats, const Tiling& tiling, int64_t q_tile,
                  const TileReference& reference, NaiveErrors& e) {
  const int64_t rows = tiling.rows_in_q_tile(q_tile);
  const size_t d = static_cast<size_t>(config.head_dim);
  std::vector<float> o(static_cast<size_t>(rows) * d), lse(static_cast<size_t>(rows));
  naive_attention_rows(config, floats.q.data(), floats.k_rounded_t.data(), floats.v.data(), q_tile * tiling.block_m,
                       rows, o.data(), lse.data());
  const RefState want = reference.final_output();
  for (int32_t r = 0; r < want.rows; ++r) {
    e.lse_dtype = std::max(e.lse_dtype, value_error(lse[static_cast<size_t>(r)], want.m[static_cast<size_t>(r)]));
    for (size_t c = 0; c < d; ++c) e.o_dtype = std::max(e.o_dtype, value_error(o[r * d + c], want.o[r * d + c]));
  }
}

}  // namespace

PairFloats pair_floats(const AttentionConfig& config, const AttentionInputs& inputs) {
  PairFloats f;
  f.q = inputs.q.to_float();
  f.v = inputs.v.to_float();
  const float scale = static_cast<float>(config.effective_scale());
  f.k_scaled_t = scaled_keys_transposed(inputs.k, 0, config.seq_kv, config.head_dim, scale, DType::f32);
  if (config.dtype != DType::f32) {  // rounding element by element: the same in either layout
    f.k_rounded_t = f.k_scaled_t;
    round_to_dtype(config.dtype, f.k_rounded_t.data(), f.k_rounded_t.size());
  }
  return f;
}

NaiveErrors naive_tile_errors(const AttentionConfig& config, const PairFloats& floats,
                              const Tiling& tiling, int64_t q_tile, const TileReference& reference) {
  NaiveErrors e;
  const F32States st = f32_states(config, floats, tiling, q_tile);
  const size_t rows = static_cast<size_t>(st.rows), d = static_cast<size_t>(st.d);
  for (int32_t tile = 0; tile < st.tiles; ++tile) {
    const size_t at = static_cast<size_t>(tile) * rows;
    const TraceState got{Convention::unnormalized, st.rows, st.d,
                         std::span<const float>(st.m).subspan(at, rows), std::span<const float>(st.l).subspan(at, rows),
                         std::span<const float>(st.o).subspan(at * d, rows * d)};
    add_state_errors(got, reference.kv_range(tile, tile + 1), e);
  }
  const TraceState all{Convention::unnormalized, st.rows, st.d, st.all_m, st.all_l, st.all_o};
  add_state_errors(all, reference.kv_range(0, st.tiles), e);
  if (config.dtype != DType::f32) {
    dtype_errors(config, floats, tiling, q_tile, reference, e);
    return e;
  }
  // In float32 the all-keys textbook state is the input-dtype naive attention already: its
  // O/l and LSE against the final output (a third of the baseline's cost saved).
  std::vector<RowError> rows_err(rows);
  compare_state(all, reference.final_output(), rows_err);
  for (const RowError& r : rows_err) {
    e.o_dtype = std::max<double>(e.o_dtype, r.o_norm_err);
    e.lse_dtype = std::max<double>(e.lse_dtype, r.m_err);
  }
  return e;
}

NaiveErrors max_errors(const NaiveErrors& a, const NaiveErrors& b) {
  NaiveErrors m;
  m.m_f32 = std::max(a.m_f32, b.m_f32);
  m.l_rel_f32 = std::max(a.l_rel_f32, b.l_rel_f32);
  m.o_norm_f32 = std::max(a.o_norm_f32, b.o_norm_f32);
  m.o_dtype = std::max(a.o_dtype, b.o_dtype);
  m.lse_dtype = std::max(a.lse_dtype, b.lse_dtype);
  return m;
}

}  // namespace ts
