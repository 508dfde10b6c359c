#include "kernels/naive_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include "base/dtype_conversion.h"

namespace ts {
namespace {

// One pair's inputs as naive_attention_rows reads them.
struct NaiveHeadInputs {
  std::vector<float> q, k_t, v;
};

NaiveHeadInputs naive_head_inputs(const AttentionConfig& c, const AttentionInputs& in,
                                  int64_t pair) {
  const int64_t sq = c.seq_q, skv = c.seq_kv, d = c.head_dim;
  NaiveHeadInputs h;
  h.q.resize(static_cast<size_t>(sq * d));
  h.v.resize(static_cast<size_t>(skv * d));
  in.q.copy_floats(pair * sq * d, sq * d, h.q.data());
  in.v.copy_floats(pair * skv * d, skv * d, h.v.data());
  h.k_t = scaled_keys_transposed(in.k, pair * skv * d, skv, d, static_cast<float>(c.effective_scale()), c.dtype);
  return h;
}

void attend_one_head(const AttentionConfig& c, const AttentionInputs& in, int64_t bh,
                     NaiveOutput& out) {
  const NaiveHeadInputs head = naive_head_inputs(c, in, bh);
  const int64_t sq = c.seq_q, d = c.head_dim;
  std::vector<float> o(static_cast<size_t>(sq * d));
  naive_attention_rows(c, head.q.data(), head.k_t.data(), head.v.data(), 0, sq, o.data(),
                       out.lse.data() + bh * sq);
  for (int64_t i = 0; i < sq * d; ++i) out.o.set_float(bh * sq * d + i, o[static_cast<size_t>(i)]);
}

}  // namespace

NaiveOutput naive_attention(const AttentionConfig& config, const AttentionInputs& inputs,
                            unsigned workers) {
  validate(config);
  check_inputs(config, inputs);
  NaiveOutput out;
  out.o = HostTensor::zeros(config.dtype, {config.batch, config.heads, config.seq_q, config.head_dim});
  out.lse.assign(static_cast<size_t>(config.batch * config.heads * config.seq_q), 0.0f);
  const int64_t pairs = config.batch * config.heads;
  const unsigned w = static_cast<unsigned>(std::min<int64_t>(
      pairs, workers ? workers : std::max(1u, std::thread::hardware_concurrency())));
  std::atomic<int64_t> next{0};
  auto run = [&] {
    for (int64_t bh; (bh = next.fetch_add(1)) < pairs;) attend_one_head(config, inputs, bh, out);
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < w; ++t) threads.emplace_back(run);
  run();
  for (auto& t : threads) t.join();
  return out;
}

void scores_in_order(const float* q, const float* k_t, int64_t head_dim, int64_t seq_kv,
                     int64_t keys, float* s) {
  std::fill(s, s + keys, 0.0f);
  for (int64_t e = 0; e < head_dim; ++e) {
    const float qe = q[e];
    const float* row = k_t + e * seq_kv;
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
    for (int64_t e = 0; e < head_dim; ++e) t[static_cast<size_t>(e * seq_kv + j)] = rows[static_cast<size_t>(j * head_dim + e)];
  return t;
}

void naive_attention_rows(const AttentionConfig& c, const float* q_all, const float* k_t,
                          const float* v_all, int64_t row0, int64_t rows, float* o, float* lse) {
  const int64_t sq = c.seq_q, skv = c.seq_kv, d = c.head_dim;
  std::vector<float> p(static_cast<size_t>(skv)), acc(static_cast<size_t>(d));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = row0 + r;
    const int64_t visible = c.causal ? std::clamp<int64_t>(i + skv - sq + 1, 0, skv) : skv;
    scores_in_order(q_all + i * d, k_t, d, skv, visible, p.data());
    round_to_dtype(c.dtype, p.data(), static_cast<size_t>(visible));  // the matmul's output
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < visible; ++j) mx = std::max(mx, p[static_cast<size_t>(j)]);
    float sum = 0.0f;
    for (int64_t j = 0; j < visible; ++j) {
      p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx);
      sum += p[static_cast<size_t>(j)];
    }
    lse[r] = visible > 0 ? mx + std::log(sum) : -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < visible; ++j) p[static_cast<size_t>(j)] /= sum;
    round_to_dtype(c.dtype, p.data(), static_cast<size_t>(visible));  // softmax's output
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t j = 0; j < visible; ++j) {
      const float pj = p[static_cast<size_t>(j)];
      const float* v = v_all + j * d;
      for (int64_t e = 0; e < d; ++e) acc[static_cast<size_t>(e)] += pj * v[e];
    }
    round_to_dtype(c.dtype, acc.data(), acc.size());
    std::copy(acc.begin(), acc.end(), o + r * d);
  }
}

}  // namespace ts
