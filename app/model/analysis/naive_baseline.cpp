#include "app/model/analysis/naive_baseline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "app/model/analysis/parallel_for.h"

namespace ts {
namespace {

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

// A textbook's errors: the largest of each quantity over its pieces' and all keys' states.
struct StateErrors {
  double m = 0.0, l_rel = 0.0, o_norm = 0.0;
};

// The float32 textbook state of row r against the same row of an unnormalised reference state.
void add_state_errors(float m, float l, const float* o, const RefState& want, size_t r, StateErrors& e) {
  const size_t d = static_cast<size_t>(want.head_dim);
  const double l_ref = want.l[r];
  e.m = std::max(e.m, value_error(m, want.m[r]));
  const double l_err = value_error(l, l_ref);
  e.l_rel = std::max(e.l_rel, l_err == 0.0 ? 0.0 : l_err / l_ref);
  const double* o_ref = want.o.data() + r * d;
  for (size_t c = 0; c < d; ++c)
    e.o_norm = std::max(e.o_norm, value_error(normalised(o[c], l), normalised(o_ref[c], l_ref)));
}

KeyRange key_range(int64_t begin, int64_t end) { return {static_cast<int32_t>(begin), static_cast<int32_t>(end)}; }

// The errors of textbook states over each piece and over all keys against the reference's, row r
// of the states being row r - first of `reference`.
StateErrors state_errors(const TextbookStates& st, const RowBlockReference& reference, size_t first, int64_t seq_kv) {
  const std::vector<int64_t>& bounds = reference.boundaries();
  const size_t rows = static_cast<size_t>(st.rows), dd = static_cast<size_t>(st.head_dim);
  const size_t own = static_cast<size_t>(reference.block().rows);
  StateErrors e;
  for (size_t p = 0; p + 1 < bounds.size(); ++p) {
    const KeyRange range = key_range(bounds[p], bounds[p + 1]);
    const RefState want = reference.state({&range, 1});
    for (size_t r = 0; r < own; ++r) {
      const size_t at = p * rows + first + r;
      add_state_errors(st.piece_m[at], st.piece_l[at], st.piece_o.data() + at * dd, want, r, e);
    }
  }
  const KeyRange all_range = key_range(0, seq_kv);
  const RefState all_ref = reference.state({&all_range, 1});
  for (size_t r = 0; r < own; ++r)
    add_state_errors(st.all_m[first + r], st.all_l[first + r], st.all_o.data() + (first + r) * dd, all_ref, r, e);
  return e;
}

}  // namespace

std::vector<PairFloats> pair_queries(const AttentionSpec& spec, const HeadInputs& inputs) {
  check_head_inputs(spec, inputs);
  const int64_t sq = spec.seq_q, d = spec.head_dim;
  std::vector<PairFloats> out;
  out.reserve(inputs.q_pairs.size());
  for (size_t i = 0; i < inputs.q_pairs.size(); ++i) {
    const auto [b, h] = inputs.q_pairs[i];
    PairFloats f;
    f.batch = b;
    f.head = h;
    f.kv_index = inputs.kv_index(b, spec.kv_head_of(h));
    if (f.kv_index < 0)
      throw std::invalid_argument("the inputs hold no keys of (batch " + std::to_string(b) + ", kv head " +
                                  std::to_string(spec.kv_head_of(h)) + "), which query head " + std::to_string(h) +
                                  " reads");
    f.q.resize(static_cast<size_t>(sq * d));
    inputs.q.copy_floats(static_cast<int64_t>(i) * sq * d, sq * d, f.q.data());
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<PairFloats> pair_floats(const AttentionSpec& spec, const HeadInputs& inputs, unsigned workers,
                                    bool raw_keys) {
  std::vector<PairFloats> out = pair_queries(spec, inputs);
  // Each kv pair converted once, the pairs on `workers` threads (a decode trace has 128 of them).
  std::map<int32_t, std::shared_ptr<const NaiveKeys>> keys;  // by kv pair index
  for (const PairFloats& f : out) keys[f.kv_index];
  std::vector<std::map<int32_t, std::shared_ptr<const NaiveKeys>>::iterator> todo;
  for (auto it = keys.begin(); it != keys.end(); ++it) todo.push_back(it);
  parallel_for(static_cast<int64_t>(todo.size()), workers, [&](int64_t i) {
    todo[static_cast<size_t>(i)]->second =
        std::make_shared<const NaiveKeys>(naive_keys(spec, inputs, todo[static_cast<size_t>(i)]->first, raw_keys));
  });
  for (PairFloats& f : out) f.keys = keys[f.kv_index];
  return out;
}

bool needs_raw_keys(const AttentionSpec& spec, StageForms forms) {
  return forms.any_folded() && spec.softcap <= 0.0 && spec.alibi_slopes.empty();
}

NaiveErrors naive_row_block_errors(const AttentionSpec& spec, const PairFloats& floats,
                                   const RowBlockReference& reference, const NaiveKeys* given_keys, StageForms forms) {
  const RowBlockReference* one = &reference;
  return naive_row_block_errors(spec, floats, std::span(&one, 1), given_keys, forms);
}

NaiveErrors naive_row_block_errors(const AttentionSpec& spec, const PairFloats& floats,
                                   std::span<const RowBlockReference* const> references, const NaiveKeys* given_keys,
                                   StageForms forms) {
  if (references.empty()) return {};
  const RowBlock& head = references.front()->block();
  const NaiveKeys* keys_of_pair = given_keys != nullptr ? given_keys : floats.keys.get();
  if (floats.batch != head.batch || floats.head != head.head || keys_of_pair == nullptr)
    throw std::invalid_argument("naive baseline: the inputs of (batch " + std::to_string(floats.batch) + ", head " +
                                std::to_string(floats.head) + ") given for a row block of (batch " +
                                std::to_string(head.batch) + ", head " + std::to_string(head.head) + ")");
  const std::vector<int64_t>& bounds = references.front()->boundaries();
  int64_t all_rows = 0;
  for (const RowBlockReference* ref : references) {
    const RowBlock& b = ref->block();
    if (b.batch != head.batch || b.head != head.head || b.q_begin != head.q_begin + all_rows ||
        ref->boundaries() != bounds)
      throw std::invalid_argument("naive baseline: the row blocks must be of one (batch, head), each beginning where "
                                  "the one before it ends, with the same boundaries");
    all_rows += b.rows;
  }
  const int32_t d = static_cast<int32_t>(spec.head_dim);
  const size_t dd = static_cast<size_t>(d), rows = static_cast<size_t>(all_rows);
  const NaiveKeys& keys = *keys_of_pair;

  // The float32 textbook states of each piece and of all keys, for all the rows at once (each
  // row's arithmetic is its own: the same as one block at a time), against each block's
  // reference, in each formulation asked for.
  auto textbook = [&](DType p_dtype, bool folded) {
    return textbook_states(spec, head.batch, head.head, floats.q.data(), keys, head.q_begin, all_rows, bounds,
                           p_dtype, folded);
  };
  auto errors_of = [&](const TextbookStates& states) {
    StateErrors worst;
    size_t first = 0;  // the rows of `states` before this reference's
    for (const RowBlockReference* reference : references) {
      const StateErrors e = state_errors(states, *reference, first, spec.seq_kv);
      worst.m = std::max(worst.m, e.m);
      worst.l_rel = std::max(worst.l_rel, e.l_rel);
      worst.o_norm = std::max(worst.o_norm, e.o_norm);
      first += static_cast<size_t>(reference->block().rows);
    }
    return worst;
  };
  // A kernel that rounds P may sum l before the rounding or after it: the errors of both sums,
  // the larger of each quantity (O / l too: it divides by that l).
  auto errors_either_sum = [&](TextbookStates states) {
    StateErrors e = errors_of(states);
    if (states.all_l_rounded.empty()) return e;
    states.piece_l.swap(states.piece_l_rounded);
    states.all_l.swap(states.all_l_rounded);
    const StateErrors after = errors_of(states);
    e.l_rel = std::max(e.l_rel, after.l_rel);
    e.o_norm = std::max(e.o_norm, after.o_norm);
    return e;
  };
  const TextbookStates st = textbook(DType::f32, false);
  const StateErrors plain = errors_of(st);
  NaiveErrors e;
  e.m_f32 = e.m_folded = plain.m;
  e.l_rel_f32 = e.l_rel_p_rounded = e.l_rel_folded = plain.l_rel;
  e.o_norm_f32 = e.o_norm_p_rounded = e.o_norm_folded = plain.o_norm;
  const bool rounds = spec.dtype != DType::f32;  // P rounded to float32 is P
  if (forms.p_rounded && rounds) {
    const StateErrors rounded = errors_either_sum(textbook(spec.dtype, false));
    e.o_norm_p_rounded = rounded.o_norm;
    e.l_rel_p_rounded = std::max(plain.l_rel, rounded.l_rel);
  }
  e.o_norm_folded_p_rounded = e.o_norm_p_rounded;
  if (forms.any_folded()) {
    // m and the l summed before rounding do not depend on P's rounding: from whichever folded
    // states are computed first.
    const bool p_as_is = forms.folded || !rounds;
    const StateErrors folded = errors_of(textbook(p_as_is ? DType::f32 : spec.dtype, true));
    e.m_folded = folded.m;
    e.l_rel_folded = e.l_rel_folded_p_rounded = folded.l_rel;
    if (forms.folded) e.o_norm_folded = folded.o_norm;
    if (forms.folded_p_rounded) {
      const StateErrors rounded = errors_either_sum(textbook(spec.dtype, true));
      e.o_norm_folded_p_rounded = rounded.o_norm;
      e.l_rel_folded_p_rounded = std::max(folded.l_rel, rounded.l_rel);
    }
  }

  if (spec.dtype == DType::f32) {
    // In float32 the all-keys textbook state is the input-dtype naive attention already: its
    // O/l and LSE against the output (a third of the baseline's cost saved).
    size_t first = 0;
    for (const RowBlockReference* reference : references) {
      const RefState out_ref = reference->output();
      for (size_t r = 0; r < static_cast<size_t>(reference->block().rows); ++r) {
        const float l = st.all_l[first + r];
        const double lse =
            l > 0.0f ? static_cast<double>(st.all_m[first + r]) + std::log(static_cast<double>(l)) : -kInf;
        e.lse_dtype = std::max(e.lse_dtype, value_error(lse, out_ref.m[r]));
        for (size_t c = 0; c < dd; ++c)
          e.o_dtype = std::max(e.o_dtype,
                               value_error(normalised(st.all_o[(first + r) * dd + c], l), out_ref.o[r * dd + c]));
      }
      first += static_cast<size_t>(reference->block().rows);
    }
    return e;
  }
  std::vector<float> out(rows * dd), lse(rows);
  naive_attention_rows(spec, head.batch, head.head, floats.q.data(), keys, head.q_begin, all_rows, out.data(),
                       lse.data());
  size_t first = 0;
  for (const RowBlockReference* reference : references) {
    const RefState out_ref = reference->output();
    for (size_t r = 0; r < static_cast<size_t>(reference->block().rows); ++r) {
      e.lse_dtype = std::max(e.lse_dtype, value_error(lse[first + r], out_ref.m[r]));
      for (size_t c = 0; c < dd; ++c)
        e.o_dtype = std::max(e.o_dtype, value_error(out[(first + r) * dd + c], out_ref.o[r * dd + c]));
    }
    first += static_cast<size_t>(reference->block().rows);
  }
  return e;
}

NaiveErrors max_errors(const NaiveErrors& a, const NaiveErrors& b) {
  NaiveErrors m;
  m.m_f32 = std::max(a.m_f32, b.m_f32);
  m.l_rel_f32 = std::max(a.l_rel_f32, b.l_rel_f32);
  m.o_norm_f32 = std::max(a.o_norm_f32, b.o_norm_f32);
  m.o_norm_p_rounded = std::max(a.o_norm_p_rounded, b.o_norm_p_rounded);
  m.l_rel_p_rounded = std::max(a.l_rel_p_rounded, b.l_rel_p_rounded);
  m.l_rel_folded_p_rounded = std::max(a.l_rel_folded_p_rounded, b.l_rel_folded_p_rounded);
  m.m_folded = std::max(a.m_folded, b.m_folded);
  m.l_rel_folded = std::max(a.l_rel_folded, b.l_rel_folded);
  m.o_norm_folded = std::max(a.o_norm_folded, b.o_norm_folded);
  m.o_norm_folded_p_rounded = std::max(a.o_norm_folded_p_rounded, b.o_norm_folded_p_rounded);
  m.o_dtype = std::max(a.o_dtype, b.o_dtype);
  m.lse_dtype = std::max(a.lse_dtype, b.lse_dtype);
  return m;
}

}  // namespace ts
