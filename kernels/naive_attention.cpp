#include "kernels/naive_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <thread>

#include "base/dtype_conversion.h"
#include "kernels/reference.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ts {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int kGroup = kNaiveKeyGroup;
// Bytes of V the weighted sums read for every row before the next chunk: 16 KiB, which stay in
// the L1 cache from one row to the next.
constexpr int64_t kValueChunkBytes = 16 << 10;
// Rows per call of naive_attention_rows when computing a whole output.
constexpr int64_t kOutputRows = 64;

// body(i) for i in [0, n) on `workers` threads.
template <typename Body>
void for_each_index(int64_t n, unsigned workers, Body&& body) {
  const int64_t w = std::min<int64_t>(std::max<int64_t>(n, 1),
                                      workers ? workers : std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<int64_t> next{0};
  auto run = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) body(i);
  };
  std::vector<std::thread> threads;
  for (int64_t t = 1; t < w; ++t) threads.emplace_back(run);
  run();
  for (auto& t : threads) t.join();
}

// The loops that hold the arithmetic, plain and with AVX2 (see the header): the scores of up to
// 4 rows against a group of keys, and up to 2 weighted sums of the same values.

// s[r * kGroup + j] = sum over c of q_r[c] * k[c][j] (q_r = q + r * q_stride), in c's order.
void scores_plain(const float* q, size_t q_stride, int rows, const float* k_group, int64_t d, float* s) {
  for (int r = 0; r < rows; ++r) {
    float acc[kGroup] = {};
    const float* qr = q + static_cast<size_t>(r) * q_stride;
    for (int64_t c = 0; c < d; ++c) {
      const float* k = k_group + c * kGroup;
      for (int j = 0; j < kGroup; ++j) acc[j] = std::fma(qr[c], k[j], acc[j]);
    }
    std::copy_n(acc, kGroup, s + static_cast<size_t>(r) * kGroup);
  }
}

// One weighted sum: o[c] += sum over keys j of p[j] * v[j][c].
struct WeightedSum {
  const float* p;
  float* o;
};

// The sums' columns [c0, d), each in key order.
void weighted_plain(const WeightedSum* sums, int count, const float* v, int64_t n, int64_t d, int64_t c0) {
  for (int t = 0; t < count; ++t)
    for (int64_t j = 0; j < n; ++j) {
      const float pj = sums[t].p[j];
      const float* vj = v + j * d;
      float* o = sums[t].o;
      for (int64_t c = c0; c < d; ++c) o[c] = std::fma(pj, vj[c], o[c]);
    }
}

void weighted_sums_plain(const WeightedSum* sums, int count, const float* v, int64_t n, int64_t d) {
  weighted_plain(sums, count, v, n, d, 0);
}

struct Loops {
  void (*scores)(const float* q, size_t q_stride, int rows, const float* k_group, int64_t d, float* s);  // rows <= 4
  void (*weighted_sums)(const WeightedSum* sums, int count, const float* v, int64_t n, int64_t d);       // count <= 2
};

#if defined(__x86_64__)
#define TS_NAIVE_AVX2 1

template <int Rows>
__attribute__((target("avx2,fma"))) inline void scores_avx2_rows(const float* q, size_t q_stride, const float* k_group,
                                                             int64_t d, float* s) {
  constexpr int kVecs = kGroup / 8;
  __m256 acc[Rows][kVecs];
  for (int r = 0; r < Rows; ++r)
    for (int k = 0; k < kVecs; ++k) acc[r][k] = _mm256_setzero_ps();
  for (int64_t c = 0; c < d; ++c) {
    __m256 keys[kVecs];
    for (int k = 0; k < kVecs; ++k) keys[k] = _mm256_loadu_ps(k_group + c * kGroup + 8 * k);
    for (int r = 0; r < Rows; ++r) {
      const __m256 qc = _mm256_broadcast_ss(q + static_cast<size_t>(r) * q_stride + static_cast<size_t>(c));
      for (int k = 0; k < kVecs; ++k) acc[r][k] = _mm256_fmadd_ps(qc, keys[k], acc[r][k]);
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int k = 0; k < kVecs; ++k) _mm256_storeu_ps(s + static_cast<size_t>(r) * kGroup + 8 * k, acc[r][k]);
}

__attribute__((target("avx2,fma"))) void scores_avx2(const float* q, size_t q_stride, int rows, const float* k_group,
                                                 int64_t d, float* s) {
  switch (rows) {
    case 4: scores_avx2_rows<4>(q, q_stride, k_group, d, s); break;
    case 3: scores_avx2_rows<3>(q, q_stride, k_group, d, s); break;
    case 2: scores_avx2_rows<2>(q, q_stride, k_group, d, s); break;
    default: scores_avx2_rows<1>(q, q_stride, k_group, d, s); break;
  }
}

// The columns from c0 on, Vecs vectors of 8 columns per sum at a time (the sums share each load
// of V); returns the first column left.
template <int Count, int Vecs>
__attribute__((target("avx2,fma"))) inline int64_t weighted_columns_avx2(const WeightedSum* sums, const float* v,
                                                                     int64_t n, int64_t d, int64_t c0) {
  int64_t c = c0;
  for (; c + 8 * Vecs <= d; c += 8 * Vecs) {
    __m256 acc[Count][Vecs];
    for (int t = 0; t < Count; ++t)
      for (int k = 0; k < Vecs; ++k) acc[t][k] = _mm256_loadu_ps(sums[t].o + c + 8 * k);
    for (int64_t j = 0; j < n; ++j) {
      __m256 values[Vecs];
      for (int k = 0; k < Vecs; ++k) {
        values[k] = _mm256_loadu_ps(v + j * d + c + 8 * k);
        // Held in a register: left to itself, GCC folds the load into each sum's multiply-add,
        // loading V once per sum, and the loop waits on loads (measured 1.5x slower).
        if constexpr (Count > 1) asm("" : "+x"(values[k]));
      }
      for (int t = 0; t < Count; ++t) {
        const __m256 pj = _mm256_broadcast_ss(sums[t].p + j);
        for (int k = 0; k < Vecs; ++k) acc[t][k] = _mm256_fmadd_ps(pj, values[k], acc[t][k]);
      }
    }
    for (int t = 0; t < Count; ++t)
      for (int k = 0; k < Vecs; ++k) _mm256_storeu_ps(sums[t].o + c + 8 * k, acc[t][k]);
  }
  return c;
}

__attribute__((target("avx2,fma"))) void weighted_sums_avx2(const WeightedSum* sums, int count, const float* v, int64_t n,
                                                        int64_t d) {
  int64_t c = 0;
  if (count == 2) {
    c = weighted_columns_avx2<2, 4>(sums, v, n, d, c);
    c = weighted_columns_avx2<2, 1>(sums, v, n, d, c);
  } else {
    c = weighted_columns_avx2<1, 8>(sums, v, n, d, c);
    c = weighted_columns_avx2<1, 1>(sums, v, n, d, c);
  }
  weighted_plain(sums, count, v, n, d, c);  // the last columns of a head dim that is not a multiple of 8
}
#endif

const Loops& loops() {
  static const Loops chosen = [] {
#ifdef TS_NAIVE_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !std::getenv("TILESCOPE_NO_AVX2"))
      return Loops{scores_avx2, weighted_sums_avx2};
#endif
    return Loops{scores_plain, weighted_sums_plain};
  }();
  return chosen;
}

// K [seq_kv, head_dim] of one kv pair as float32, times `scale` in float, rounded to `dtype`,
// in transposed groups (NaiveKeys).
std::vector<float> grouped_keys(const HostTensor& k, int64_t first_element, int64_t seq_kv, int64_t d, float scale,
                                DType dtype) {
  std::vector<float> rows(static_cast<size_t>(seq_kv * d));
  k.copy_floats(first_element, seq_kv * d, rows.data());
  for (float& x : rows) x *= scale;
  round_to_dtype(dtype, rows.data(), rows.size());
  const int64_t groups = (seq_kv + kGroup - 1) / kGroup;
  std::vector<float> out(static_cast<size_t>(groups * d * kGroup), 0.0f);
  for (int64_t j = 0; j < seq_kv; ++j)
    for (int64_t c = 0; c < d; ++c)
      out[static_cast<size_t>(((j / kGroup) * d + c) * kGroup + j % kGroup)] = rows[static_cast<size_t>(j * d + c)];
  return out;
}

// The keys [a, b) of row r within the chunk [c0, c1), or an empty range.
std::pair<int64_t, int64_t> chunk_keys(const TextbookScores& t, int64_t r, int64_t c0, int64_t c1) {
  const AttentionSpec::KeySpan& span = t.visible[static_cast<size_t>(r)];
  return {std::max(c0, span.begin), std::min(c1, span.end)};
}

int64_t value_chunk(int64_t d) {
  return std::max<int64_t>(1, kValueChunkBytes / (d * static_cast<int64_t>(sizeof(float))));
}

}  // namespace

NaiveKeys naive_keys(const AttentionSpec& spec, const HeadInputs& inputs, int32_t kv_index, bool raw_keys) {
  const int64_t skv = spec.seq_kv, d = spec.head_dim;
  NaiveKeys keys;
  keys.v.resize(static_cast<size_t>(skv * d));
  inputs.v.copy_floats(int64_t{kv_index} * skv * d, skv * d, keys.v.data());
  const float scale = static_cast<float>(spec.effective_scale());
  keys.k_scaled = grouped_keys(inputs.k, int64_t{kv_index} * skv * d, skv, d, scale, DType::f32);
  if (raw_keys) keys.k_raw = grouped_keys(inputs.k, int64_t{kv_index} * skv * d, skv, d, 1.0f, DType::f32);
  if (spec.dtype != DType::f32) {  // rounding element by element: the same in either layout
    keys.k_rounded = keys.k_scaled;
    round_to_dtype(spec.dtype, keys.k_rounded.data(), keys.k_rounded.size());
  }
  return keys;
}

NaiveOutput naive_attention(const AttentionSpec& spec, const HeadInputs& inputs, unsigned workers) {
  validate(spec);
  check_head_inputs(spec, inputs);
  const int64_t sq = spec.seq_q, d = spec.head_dim;
  std::vector<int32_t> kv_of_q(inputs.q_pairs.size());
  for (size_t i = 0; i < inputs.q_pairs.size(); ++i) {
    const auto [b, h] = inputs.q_pairs[i];
    kv_of_q[i] = inputs.kv_index(b, spec.kv_head_of(h));
    if (kv_of_q[i] < 0)
      throw std::invalid_argument("the inputs hold no keys of (batch " + std::to_string(b) + ", kv head " +
                                  std::to_string(spec.kv_head_of(h)) + "), which query head " + std::to_string(h) +
                                  " reads");
  }
  NaiveOutput out;
  out.o = HostTensor::zeros(spec.dtype, {spec.batch, spec.heads_q, sq, d});
  out.lse.assign(static_cast<size_t>(spec.batch * spec.heads_q * sq), kNegInf);
  std::vector<NaiveKeys> keys(inputs.kv_pairs.size());
  for_each_index(static_cast<int64_t>(keys.size()), workers,
                 [&](int64_t i) { keys[static_cast<size_t>(i)] = naive_keys(spec, inputs, static_cast<int32_t>(i)); });
  for_each_index(static_cast<int64_t>(inputs.q_pairs.size()), workers, [&](int64_t i) {
    const auto [b, h] = inputs.q_pairs[static_cast<size_t>(i)];
    const NaiveKeys& kv = keys[static_cast<size_t>(kv_of_q[static_cast<size_t>(i)])];
    std::vector<float> q(static_cast<size_t>(sq * d)), o(static_cast<size_t>(sq * d));
    inputs.q.copy_floats(i * sq * d, sq * d, q.data());
    const int64_t row0 = (int64_t{b} * spec.heads_q + h) * sq;
    for (int64_t r0 = 0; r0 < sq; r0 += kOutputRows)
      naive_attention_rows(spec, b, h, q.data(), kv, r0, std::min(kOutputRows, sq - r0), o.data() + r0 * d,
                           out.lse.data() + row0 + r0);
    for (int64_t e = 0; e < sq * d; ++e) out.o.set_float(row0 * d + e, o[static_cast<size_t>(e)]);
  });
  return out;
}

TextbookScores textbook_scores(const AttentionSpec& spec, DType dtype, int64_t batch, int64_t head, const float* q,
                               const float* k_groups, int64_t row0, int64_t rows) {
  TextbookScores t;
  t.visible.resize(static_cast<size_t>(rows));
  int64_t lo = 0, hi = 0;
  bool any = false;
  for (int64_t r = 0; r < rows; ++r) {
    const AttentionSpec::KeySpan span = spec.visible_keys(batch, row0 + r);
    t.visible[static_cast<size_t>(r)] = span.empty() ? AttentionSpec::KeySpan{0, 0} : span;
    if (span.empty()) continue;
    lo = any ? std::min(lo, span.begin) : span.begin;
    hi = any ? std::max(hi, span.end) : span.end;
    any = true;
  }
  t.first = lo;
  t.width = hi - lo;
  t.s.assign(static_cast<size_t>(rows * t.width), 0.0f);
  const int64_t d = spec.head_dim;
  const Loops& loop = loops();
  // A group of keys at a time, for up to 4 rows that see it at once (the group stays in cache
  // from one call to the next).
  float group[4 * kGroup];
  for (int64_t g = lo / kGroup; g * kGroup < hi; ++g) {
    const int64_t key0 = g * kGroup;
    auto sees_group = [&](int64_t r) {
      const auto [a, b] = chunk_keys(t, r, key0, key0 + kGroup);
      return a < b;
    };
    for (int64_t r = 0; r < rows;) {
      if (!sees_group(r)) {
        ++r;
        continue;
      }
      int count = 1;
      while (count < 4 && r + count < rows && sees_group(r + count)) ++count;
      loop.scores(q + (row0 + r) * d, static_cast<size_t>(d), count, k_groups + g * d * kGroup, d, group);
      for (int k = 0; k < count; ++k, ++r) {
        const auto [a, b] = chunk_keys(t, r, key0, key0 + kGroup);
        std::copy(group + k * kGroup + (a - key0), group + k * kGroup + (b - key0), t.row(r) + (a - lo));
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const AttentionSpec::KeySpan& span = t.visible[static_cast<size_t>(r)];
    if (span.empty()) continue;
    float* s = t.row(r) + (span.begin - lo);
    const size_t n = static_cast<size_t>(span.end - span.begin);
    round_to_dtype(dtype, s, n);  // the matmul's output
    if (spec.softcap > 0.0) {
      const float cap = static_cast<float>(spec.softcap);
      for (size_t j = 0; j < n; ++j) s[j] /= cap;
      round_to_dtype(dtype, s, n);
      for (size_t j = 0; j < n; ++j) s[j] = std::tanh(s[j]);
      round_to_dtype(dtype, s, n);
      for (size_t j = 0; j < n; ++j) s[j] *= cap;
      round_to_dtype(dtype, s, n);
    }
    if (!spec.alibi_slopes.empty()) {  // a float32 bias: the sum stays float32
      const float slope = static_cast<float>(spec.alibi_slopes[static_cast<size_t>(head)]);
      const int64_t diagonal = row0 + r + spec.offset(batch);
      for (size_t j = 0; j < n; ++j) {
        const float distance = static_cast<float>(std::abs(diagonal - (span.begin + static_cast<int64_t>(j))));
        s[j] += -slope * distance;
      }
    }
  }
  return t;
}

TextbookStates textbook_states(const AttentionSpec& spec, int64_t batch, int64_t head, const float* q,
                               const NaiveKeys& keys, int64_t row0, int64_t rows, std::span<const int64_t> bounds,
                               DType p_dtype, bool exp2_folded) {
  if (bounds.size() < 2 || bounds.front() != 0 || bounds.back() != spec.seq_kv ||
      !std::is_sorted(bounds.begin(), bounds.end()) ||
      std::adjacent_find(bounds.begin(), bounds.end()) != bounds.end())
    throw std::invalid_argument("textbook_states: boundaries must be sorted, unique, from 0 to seq_kv");
  const int64_t d = spec.head_dim;
  const size_t pieces = bounds.size() - 1, n = static_cast<size_t>(rows), dd = static_cast<size_t>(d);
  TextbookStates st;
  st.rows = static_cast<int32_t>(rows);
  st.head_dim = static_cast<int32_t>(d);
  st.piece_m.assign(pieces * n, kNegInf);
  st.piece_l.assign(pieces * n, 0.0f);
  st.piece_o.assign(pieces * n * dd, 0.0f);
  st.all_m.assign(n, kNegInf);
  st.all_l.assign(n, 0.0f);
  st.all_o.assign(n * dd, 0.0f);
  // The folded weights of a kernel without a softcap or ALiBi start from the unscaled scores.
  const bool unscaled = exp2_folded && spec.softcap <= 0.0 && spec.alibi_slopes.empty();
  if (unscaled && keys.k_raw.empty())
    throw std::invalid_argument("textbook_states: the exp2-folded states need the keys unscaled (naive_keys' raw_keys)");
  TextbookScores t =
      textbook_scores(spec, DType::f32, batch, head, q, (unscaled ? keys.k_raw : keys.k_scaled).data(), row0, rows);
  const float log2e = std::numbers::log2e_v<float>;
  const float scale = unscaled ? static_cast<float>(spec.effective_scale()) : 1.0f;
  const float exp2_factor = scale * log2e;
  // The weights of scores s[a, b) against their max, as the formulation takes them; the max
  // returned in scaled units.
  auto weights = [&](const float* s, size_t a, size_t b, float* p, float& l) {
    float m = kNegInf;
    for (size_t j = a; j < b; ++j) m = std::max(m, s[j]);
    if (!exp2_folded) {
      for (size_t j = a; j < b; ++j) l += (p[j] = std::exp(s[j] - m));
      return m;
    }
    m *= scale;
    const float neg_shift = -m * log2e;
    for (size_t j = a; j < b; ++j) l += (p[j] = std::exp2(std::fma(s[j], exp2_factor, neg_shift)));
    return m;
  };
  auto piece_of = [&](int64_t j) {  // the piece that holds key j
    return static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), j) - bounds.begin()) - 1;
  };
  // Per row: the max, exp(s - m) and its sum, of each piece and of all keys, in key order.
  const size_t width = static_cast<size_t>(t.width);
  std::vector<float> p_piece(n * width), p_all(n * width);
  for (size_t r = 0; r < n; ++r) {
    const AttentionSpec::KeySpan& span = t.visible[r];
    if (span.empty()) continue;
    const float* s = t.row(static_cast<int64_t>(r));
    const size_t a = static_cast<size_t>(span.begin - t.first), b = static_cast<size_t>(span.end - t.first);
    st.all_m[r] = weights(s, a, b, p_all.data() + r * width, st.all_l[r]);
    for (size_t p = piece_of(span.begin); p < pieces && bounds[p] < span.end; ++p) {
      const size_t pa = static_cast<size_t>(std::max(bounds[p], span.begin) - t.first);
      const size_t pb = static_cast<size_t>(std::min(bounds[p + 1], span.end) - t.first);
      st.piece_m[p * n + r] = weights(s, pa, pb, p_piece.data() + r * width, st.piece_l[p * n + r]);
    }
  }
  if (p_dtype != DType::f32) {  // the weights as a 16-bit P operand holds them (the sums l are taken)
    round_to_dtype(p_dtype, p_piece.data(), p_piece.size());
    round_to_dtype(p_dtype, p_all.data(), p_all.size());
    // and their sums, in key order, for a kernel that sums P after rounding it
    st.piece_l_rounded.assign(pieces * n, 0.0f);
    st.all_l_rounded.assign(n, 0.0f);
    for (size_t r = 0; r < n; ++r) {
      const AttentionSpec::KeySpan& span = t.visible[r];
      if (span.empty()) continue;
      const size_t row = r * width;
      for (int64_t j = span.begin; j < span.end; ++j) st.all_l_rounded[r] += p_all[row + static_cast<size_t>(j - t.first)];
      for (size_t p = piece_of(span.begin); p < pieces && bounds[p] < span.end; ++p)
        for (int64_t j = std::max(bounds[p], span.begin); j < std::min(bounds[p + 1], span.end); ++j)
          st.piece_l_rounded[p * n + r] += p_piece[row + static_cast<size_t>(j - t.first)];
    }
  }
  // O of the row's piece and of all keys in one pass over V, a chunk at a time for every row.
  const Loops& loop = loops();
  const int64_t chunk = value_chunk(d);
  for (int64_t c0 = t.first; c0 < t.first + t.width; c0 += chunk) {
    const int64_t c1 = std::min(t.first + t.width, c0 + chunk);
    for (size_t r = 0; r < n; ++r) {
      const auto [a, b] = chunk_keys(t, static_cast<int64_t>(r), c0, c1);
      for (int64_t sa = a; sa < b;) {
        const size_t p = piece_of(sa);
        const int64_t sb = std::min(b, bounds[p + 1]);
        const size_t at = r * width + static_cast<size_t>(sa - t.first);
        const WeightedSum sums[2] = {{p_piece.data() + at, st.piece_o.data() + (p * n + r) * dd},
                                     {p_all.data() + at, st.all_o.data() + r * dd}};
        loop.weighted_sums(sums, 2, keys.v.data() + sa * d, sb - sa, d);
        sa = sb;
      }
    }
  }
  return st;
}

void naive_attention_rows(const AttentionSpec& spec, int64_t batch, int64_t head, const float* q,
                          const NaiveKeys& keys, int64_t row0, int64_t rows, float* o, float* lse) {
  const int64_t d = spec.head_dim;
  const DType dtype = spec.dtype;
  TextbookScores t = textbook_scores(spec, dtype, batch, head, q, keys.k_dtype().data(), row0, rows);
  // Softmax, row by row: the weights replace the scores.
  for (int64_t r = 0; r < rows; ++r) {
    const AttentionSpec::KeySpan& span = t.visible[static_cast<size_t>(r)];
    const size_t n = static_cast<size_t>(span.end - span.begin);
    float* p = t.row(r) + (span.begin - t.first);
    float mx = kNegInf;
    for (size_t j = 0; j < n; ++j) mx = std::max(mx, p[j]);
    float sum = 0.0f;
    for (size_t j = 0; j < n; ++j) {
      p[j] = std::exp(p[j] - mx);
      sum += p[j];
    }
    lse[r] = n > 0 ? mx + std::log(sum) : kNegInf;
    for (size_t j = 0; j < n; ++j) p[j] /= sum;
    round_to_dtype(dtype, p, n);  // softmax's output
  }
  // O = P V, a chunk of V at a time for every row; two rows that see the same keys of the chunk
  // at once.
  std::fill(o, o + rows * d, 0.0f);
  const Loops& loop = loops();
  const int64_t chunk = value_chunk(d);
  for (int64_t c0 = t.first; c0 < t.first + t.width; c0 += chunk) {
    const int64_t c1 = std::min(t.first + t.width, c0 + chunk);
    for (int64_t r = 0; r < rows;) {
      const auto [a, b] = chunk_keys(t, r, c0, c1);
      if (a >= b) {
        ++r;
        continue;
      }
      const int count = r + 1 < rows && chunk_keys(t, r + 1, c0, c1) == std::pair{a, b} ? 2 : 1;
      WeightedSum sums[2];
      for (int k = 0; k < count; ++k) sums[k] = {t.row(r + k) + (a - t.first), o + (r + k) * d};
      loop.weighted_sums(sums, count, keys.v.data() + a * d, b - a, d);
      r += count;
    }
  }
  round_to_dtype(dtype, o, static_cast<size_t>(rows * d));  // the matmul's output
}

}  // namespace ts
