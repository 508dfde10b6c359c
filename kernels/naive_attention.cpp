#include "kernels/naive_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "base/dtype_conversion.h"
#include "kernels/reference.h"

namespace ts {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

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

}  // namespace

NaiveKeys naive_keys(const AttentionSpec& spec, const HeadInputs& inputs, int32_t kv_index) {
  const int64_t skv = spec.seq_kv, d = spec.head_dim;
  NaiveKeys keys;
  keys.v.resize(static_cast<size_t>(skv * d));
  inputs.v.copy_floats(int64_t{kv_index} * skv * d, skv * d, keys.v.data());
  keys.k_scaled_t = scaled_keys_transposed(inputs.k, int64_t{kv_index} * skv * d, skv, d,
                                           static_cast<float>(spec.effective_scale()), DType::f32);
  if (spec.dtype != DType::f32) {  // rounding element by element: the same in either layout
    keys.k_rounded_t = keys.k_scaled_t;
    round_to_dtype(spec.dtype, keys.k_rounded_t.data(), keys.k_rounded_t.size());
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
    naive_attention_rows(spec, b, h, q.data(), kv.k_dtype_t().data(), kv.v.data(), 0, sq, o.data(),
                         out.lse.data() + row0);
    for (int64_t e = 0; e < sq * d; ++e) out.o.set_float(row0 * d + e, o[static_cast<size_t>(e)]);
  });
  return out;
}

void scores_in_order(const float* q, const float* k_t, int64_t head_dim, int64_t seq_kv, int64_t begin,
                     int64_t end, float* s) {
  const int64_t keys = end - begin;
  std::fill(s, s + std::max<int64_t>(keys, 0), 0.0f);
  for (int64_t e = 0; e < head_dim; ++e) {
    const float qe = q[e];
    const float* row = k_t + e * seq_kv + begin;
    for (int64_t j = 0; j < keys; ++j) s[j] += qe * row[j];
  }
}

std::vector<float> scaled_keys_transposed(const HostTensor& k, int64_t first_element, int64_t seq_kv,
                                          int64_t head_dim, float scale, DType dtype) {
  std::vector<float> rows(static_cast<size_t>(seq_kv * head_dim));
  k.copy_floats(first_element, seq_kv * head_dim, rows.data());
  for (float& x : rows) x *= scale;
  round_to_dtype(dtype, rows.data(), rows.size());
  std::vector<float> t(rows.size());
  for (int64_t j = 0; j < seq_kv; ++j)
    for (int64_t e = 0; e < head_dim; ++e)
      t[static_cast<size_t>(e * seq_kv + j)] = rows[static_cast<size_t>(j * head_dim + e)];
  return t;
}

void textbook_scores(const AttentionSpec& spec, DType dtype, int64_t batch, int64_t head, int64_t i,
                     const float* q_row, const float* k_t, int64_t begin, int64_t end, float* s) {
  if (end <= begin) return;
  const size_t n = static_cast<size_t>(end - begin);
  scores_in_order(q_row, k_t, spec.head_dim, spec.seq_kv, begin, end, s);
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
    const int64_t diagonal = i + spec.offset(batch);
    for (size_t j = 0; j < n; ++j) {
      const float distance = static_cast<float>(std::abs(diagonal - (begin + static_cast<int64_t>(j))));
      s[j] += -slope * distance;
    }
  }
}

void naive_attention_rows(const AttentionSpec& spec, int64_t batch, int64_t head, const float* q_all,
                          const float* k_t, const float* v_all, int64_t row0, int64_t rows, float* o, float* lse) {
  const int64_t d = spec.head_dim;
  const DType dtype = spec.dtype;
  std::vector<float> p(static_cast<size_t>(spec.seq_kv)), acc(static_cast<size_t>(d));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = row0 + r;
    const AttentionSpec::KeySpan span = spec.visible_keys(batch, i);
    const int64_t keys = span.empty() ? 0 : span.end - span.begin;
    const size_t n = static_cast<size_t>(keys);
    textbook_scores(spec, dtype, batch, head, i, q_all + i * d, k_t, span.begin, span.begin + keys, p.data());
    float mx = kNegInf;
    for (size_t j = 0; j < n; ++j) mx = std::max(mx, p[j]);
    float sum = 0.0f;
    for (size_t j = 0; j < n; ++j) {
      p[j] = std::exp(p[j] - mx);
      sum += p[j];
    }
    lse[r] = keys > 0 ? mx + std::log(sum) : kNegInf;
    for (size_t j = 0; j < n; ++j) p[j] /= sum;
    round_to_dtype(dtype, p.data(), n);  // softmax's output
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (size_t j = 0; j < n; ++j) {
      const float pj = p[j];
      const float* v = v_all + (span.begin + static_cast<int64_t>(j)) * d;
      for (int64_t e = 0; e < d; ++e) acc[static_cast<size_t>(e)] += pj * v[e];
    }
    round_to_dtype(dtype, acc.data(), acc.size());  // the matmul's output
    std::copy(acc.begin(), acc.end(), o + r * d);
  }
}

}  // namespace ts
