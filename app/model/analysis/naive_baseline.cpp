#include "app/model/analysis/naive_baseline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

namespace ts {
namespace {

constexpr float kNegInfF = -std::numeric_limits<float>::infinity();
constexpr double kInf = std::numeric_limits<double>::infinity();

// |got - want| with the special values of attention states, by state_compare.h's rule
// (value_error): equal infinities (m = -inf of a row that sees no key) are no error, NaN is an
// infinite one.
double value_error(double got, double want) {
  if (std::isnan(got) || std::isnan(want)) return kInf;
  if (got == want) return 0.0;
  return std::fabs(got - want);
}

// O / l of a row, 0 where the row saw no key (l = 0, O = 0).
double normalised(double o, double l) { return l == 0.0 && o == 0.0 ? 0.0 : o / l; }

// The textbook state of one row over the keys [begin, end) of its scores `s` (s[0] is key
// `first`): max, exp, sums, in key order, in float32.
void row_state(const float* s, const float* v, int64_t first, int64_t begin, int64_t end, int32_t d, float& m,
               float& l, float* o) {
  m = kNegInfF;
  l = 0.0f;
  std::fill(o, o + d, 0.0f);
  if (end <= begin) return;
  for (int64_t j = begin; j < end; ++j) m = std::max(m, s[j - first]);
  for (int64_t j = begin; j < end; ++j) {
    const float p = std::exp(s[j - first] - m);
    l += p;
    const float* vj = v + j * d;
    for (int32_t c = 0; c < d; ++c) o[c] += p * vj[c];
  }
}

// The float32 textbook state of row r against the same row of an unnormalised reference state.
void add_state_errors(float m, float l, const float* o, const RefState& want, size_t r, NaiveErrors& e) {
  const size_t d = static_cast<size_t>(want.head_dim);
  const double l_ref = want.l[r];
  e.m_f32 = std::max(e.m_f32, value_error(m, want.m[r]));
  const double l_err = value_error(l, l_ref);
  e.l_rel_f32 = std::max(e.l_rel_f32, l_err == 0.0 ? 0.0 : l_err / l_ref);
  const double* o_ref = want.o.data() + r * d;
  for (size_t c = 0; c < d; ++c)
    e.o_norm_f32 = std::max(e.o_norm_f32, value_error(normalised(o[c], l), normalised(o_ref[c], l_ref)));
}

KeyRange key_range(int64_t begin, int64_t end) { return {static_cast<int32_t>(begin), static_cast<int32_t>(end)}; }

}  // namespace

std::vector<PairFloats> pair_floats(const AttentionSpec& spec, const HeadInputs& inputs) {
  check_head_inputs(spec, inputs);
  const int64_t sq = spec.seq_q, d = spec.head_dim;
  std::map<int32_t, std::shared_ptr<const NaiveKeys>> keys;  // by kv pair index
  std::vector<PairFloats> out;
  out.reserve(inputs.q_pairs.size());
  for (size_t i = 0; i < inputs.q_pairs.size(); ++i) {
    const auto [b, h] = inputs.q_pairs[i];
    const int32_t kv = inputs.kv_index(b, spec.kv_head_of(h));
    if (kv < 0)
      throw std::invalid_argument("the inputs hold no keys of (batch " + std::to_string(b) + ", kv head " +
                                  std::to_string(spec.kv_head_of(h)) + "), which query head " + std::to_string(h) +
                                  " reads");
    auto& shared = keys[kv];
    if (!shared) shared = std::make_shared<const NaiveKeys>(naive_keys(spec, inputs, kv));
    PairFloats f;
    f.batch = b;
    f.head = h;
    f.q.resize(static_cast<size_t>(sq * d));
    inputs.q.copy_floats(static_cast<int64_t>(i) * sq * d, sq * d, f.q.data());
    f.keys = shared;
    out.push_back(std::move(f));
  }
  return out;
}

NaiveErrors naive_row_block_errors(const AttentionSpec& spec, const PairFloats& floats,
                                   const RowBlockReference& reference) {
  const RowBlock& block = reference.block();
  if (floats.batch != block.batch || floats.head != block.head || !floats.keys)
    throw std::invalid_argument("naive baseline: the inputs of (batch " + std::to_string(floats.batch) + ", head " +
                                std::to_string(floats.head) + ") given for a row block of (batch " +
                                std::to_string(block.batch) + ", head " + std::to_string(block.head) + ")");
  const int32_t d = static_cast<int32_t>(spec.head_dim);
  const size_t dd = static_cast<size_t>(d);
  const std::vector<int64_t>& bounds = reference.boundaries();
  const size_t pieces = bounds.size() - 1;
  std::vector<RefState> piece_refs;
  piece_refs.reserve(pieces);
  for (size_t p = 0; p < pieces; ++p) {
    const KeyRange range = key_range(bounds[p], bounds[p + 1]);
    piece_refs.push_back(reference.state({&range, 1}));
  }
  const KeyRange all_range = key_range(0, spec.seq_kv);
  const RefState all_ref = reference.state({&all_range, 1});
  const RefState out_ref = reference.output();

  NaiveErrors e;
  const NaiveKeys& keys = *floats.keys;
  std::vector<float> s(static_cast<size_t>(spec.seq_kv)), o(dd);
  for (int32_t r = 0; r < block.rows; ++r) {
    const size_t row = static_cast<size_t>(r);
    const int64_t i = int64_t{block.q_begin} + r;
    const AttentionSpec::KeySpan span = spec.visible_keys(block.batch, i);
    const int64_t end = span.empty() ? span.begin : span.end;
    textbook_scores(spec, DType::f32, block.batch, block.head, i, floats.q.data() + i * d, keys.k_scaled_t.data(),
                    span.begin, end, s.data());
    float m = 0, l = 0;
    for (size_t p = 0; p < pieces; ++p) {
      row_state(s.data(), keys.v.data(), span.begin, std::max(span.begin, bounds[p]), std::min(end, bounds[p + 1]), d,
                m, l, o.data());
      add_state_errors(m, l, o.data(), piece_refs[p], row, e);
    }
    row_state(s.data(), keys.v.data(), span.begin, span.begin, end, d, m, l, o.data());
    add_state_errors(m, l, o.data(), all_ref, row, e);
    if (spec.dtype == DType::f32) {
      // In float32 the all-keys textbook state is the input-dtype naive attention already: its
      // O/l and LSE against the output (a third of the baseline's cost saved).
      const double lse = l > 0.0f ? static_cast<double>(m) + std::log(static_cast<double>(l)) : -kInf;
      e.lse_dtype = std::max(e.lse_dtype, value_error(lse, out_ref.m[row]));
      for (size_t c = 0; c < dd; ++c)
        e.o_dtype = std::max(e.o_dtype, value_error(normalised(o[c], l), out_ref.o[row * dd + c]));
    }
  }
  if (spec.dtype != DType::f32) {
    std::vector<float> out(static_cast<size_t>(block.rows) * dd), lse(static_cast<size_t>(block.rows));
    naive_attention_rows(spec, block.batch, block.head, floats.q.data(), keys.k_dtype_t().data(), keys.v.data(),
                         block.q_begin, block.rows, out.data(), lse.data());
    for (size_t r = 0; r < static_cast<size_t>(block.rows); ++r) {
      e.lse_dtype = std::max(e.lse_dtype, value_error(lse[r], out_ref.m[r]));
      for (size_t c = 0; c < dd; ++c) e.o_dtype = std::max(e.o_dtype, value_error(out[r * dd + c], out_ref.o[r * dd + c]));
    }
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
