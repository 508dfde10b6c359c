// Single-row float64 states under a changed attention (row_states.h).
#include "app/model/analysis/row_states.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ts {

RowStates::RowStates(const AttentionSpec& spec, const HeadInputs& inputs) : spec_(spec), inputs_(inputs) {}

const std::vector<double>& RowStates::query_row(int32_t batch, int32_t head, int64_t row) {
  auto [it, fresh] = queries_.try_emplace({batch, head, row});
  if (fresh) {
    const int32_t p = inputs_.q_index(batch, head);
    if (p < 0) throw std::invalid_argument("no query inputs for batch " + std::to_string(batch) + " head " + std::to_string(head));
    it->second.resize(static_cast<size_t>(spec_.head_dim));
    inputs_.q.copy_doubles((int64_t{p} * spec_.seq_q + row) * spec_.head_dim, spec_.head_dim, it->second.data());
  }
  return it->second;
}

const std::vector<float>& RowStates::kv(int32_t kv_batch, int32_t kv_head, bool values) {
  auto [it, fresh] = keys_.try_emplace({kv_batch, kv_head, values});
  if (fresh) {
    const int32_t p = inputs_.kv_index(kv_batch, kv_head);
    if (p < 0)
      throw std::invalid_argument("no key inputs for batch " + std::to_string(kv_batch) + " kv head " + std::to_string(kv_head));
    const int64_t n = spec_.seq_kv * spec_.head_dim;
    it->second.resize(static_cast<size_t>(n));
    (values ? inputs_.v : inputs_.k).copy_floats(int64_t{p} * n, n, it->second.data());
  }
  return it->second;
}

RowState RowStates::state(int32_t batch, int32_t head, int64_t row, int32_t kv_batch, int32_t kv_head,
                          std::span<const KeyRange> ranges, int32_t zero_keys, const ScoreVariant& v) {
  return state_of(query_row(batch, head, row), batch, head, row, kv_batch, kv_head, ranges, zero_keys, v);
}

RowState RowStates::zero_query_state(int32_t batch, int32_t head, int64_t row, int32_t kv_batch, int32_t kv_head,
                                     std::span<const KeyRange> ranges) {
  if (row < spec_.q_len(batch))
    throw std::invalid_argument("row " + std::to_string(row) + " of batch " + std::to_string(batch) +
                                " is a query row, not one past the queries");
  const std::vector<double> zeros(static_cast<size_t>(spec_.head_dim), 0.0);
  return state_of(zeros, batch, head, row, kv_batch, kv_head, ranges, 0, {});
}

RowState RowStates::state_of(std::span<const double> q, int32_t batch, int32_t head, int64_t row, int32_t kv_batch,
                             int32_t kv_head, std::span<const KeyRange> ranges, int32_t zero_keys, const ScoreVariant& v) {
  const size_t d = static_cast<size_t>(spec_.head_dim);
  const std::vector<float>& k = kv(kv_batch, kv_head, false);
  const std::vector<float>& val = kv(kv_batch, kv_head, true);
  const double scale = spec_.effective_scale() * v.score_factor;
  const bool cap = v.softcap && spec_.softcap > 0.0;
  const bool alibi = v.alibi && !spec_.alibi_slopes.empty();
  const double slope = alibi ? spec_.alibi_slopes[static_cast<size_t>(head)] : 0.0;
  const int64_t diagonal = row + spec_.offset(batch);
  auto finish = [&](double raw, int64_t j) {
    double s = raw * scale;
    if (cap) s = spec_.softcap * std::tanh(s / spec_.softcap);
    if (alibi && j >= 0) s -= slope * static_cast<double>(std::llabs(diagonal - j));
    return s;
  };
  std::vector<double> scores;
  std::vector<int64_t> keys;
  for (const KeyRange& r : ranges)
    for (int64_t j = std::max<int64_t>(r.begin, 0); j < std::min<int64_t>(r.end, spec_.seq_kv); ++j) {
      double dot = 0;
      const float* kj = k.data() + static_cast<size_t>(j) * d;
      for (size_t c = 0; c < d; ++c) dot += q[c] * static_cast<double>(kj[c]);
      scores.push_back(finish(dot, j));
      keys.push_back(j);
    }
  for (int32_t z = 0; z < zero_keys; ++z) {
    scores.push_back(finish(0.0, -1));
    keys.push_back(-1);
  }
  RowState out;
  out.o.assign(d, 0.0);
  if (scores.empty()) return out;
  out.m = *std::max_element(scores.begin(), scores.end());
  for (size_t i = 0; i < scores.size(); ++i) {
    const double p = std::exp(v.exponent_factor * (scores[i] - out.m));
    out.l += p;
    if (keys[i] < 0) continue;  // a zero-filled key adds nothing to O
    const float* vj = val.data() + static_cast<size_t>(keys[i]) * d;
    for (size_t c = 0; c < d; ++c) out.o[c] += p * static_cast<double>(vj[c]);
  }
  return out;
}

namespace {

std::vector<KeyRange> within(const KeySpan& span, std::span<const KeyRange> ranges) {
  std::vector<KeyRange> out;
  for (const KeyRange& r : ranges) {
    const int64_t b = std::max<int64_t>(r.begin, span.begin), e = std::min<int64_t>(r.end, span.end);
    if (b < e) out.push_back({static_cast<int32_t>(b), static_cast<int32_t>(e)});
  }
  return out;
}

}  // namespace

std::vector<KeyRange> visible_in(const AttentionSpec& spec, int32_t batch, int64_t row, std::span<const KeyRange> ranges) {
  return within(spec.visible_keys(batch, row), ranges);
}

std::vector<KeyRange> visible_past_end(const AttentionSpec& spec, int32_t batch, int64_t row, std::span<const KeyRange> ranges) {
  return within(spec.mask_keys(batch, row), ranges);
}

int64_t count_keys(std::span<const KeyRange> ranges) {
  int64_t n = 0;
  for (const KeyRange& r : ranges) n += std::max(0, r.end - r.begin);
  return n;
}

}  // namespace ts
