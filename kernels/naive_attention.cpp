#include "kernels/naive_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace ts {
namespace {

// x rounded to the dtype (to nearest even), as a float again.
float round_to(DType dtype, float x) {
  switch (dtype) {
    case DType::f32: return x;
    case DType::f16: return __half2float(__float2half_rn(x));
    case DType::bf16: return __bfloat162float(__float2bfloat16_rn(x));
  }
  return x;
}

void attend_one_head(const AttentionConfig& c, const AttentionInputs& in, int64_t bh,
                     NaiveOutput& out) {
  const int64_t sq = c.seq_q, skv = c.seq_kv, d = c.head_dim;
  const float scale = static_cast<float>(c.effective_scale());
  std::vector<float> q(static_cast<size_t>(sq * d)), k(static_cast<size_t>(skv * d)),
      v(static_cast<size_t>(skv * d));
  for (int64_t i = 0; i < sq * d; ++i) q[i] = in.q.get_float(bh * sq * d + i);
  for (int64_t i = 0; i < skv * d; ++i) {
    k[i] = round_to(c.dtype, in.k.get_float(bh * skv * d + i) * scale);
    v[i] = in.v.get_float(bh * skv * d + i);
  }
  std::vector<float> p(static_cast<size_t>(skv)), acc(static_cast<size_t>(d));
  for (int64_t i = 0; i < sq; ++i) {
    const int64_t visible =
        c.causal ? std::clamp<int64_t>(i + skv - sq + 1, 0, skv) : skv;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < visible; ++j) {
      float s = 0.0f;  // float32 accumulation, in order
      for (int64_t e = 0; e < d; ++e) s += q[i * d + e] * k[j * d + e];
      p[j] = round_to(c.dtype, s);
      mx = std::max(mx, p[j]);
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < visible; ++j) {
      p[j] = std::exp(p[j] - mx);
      sum += p[j];
    }
    const int64_t row = bh * sq + i;
    out.lse[row] = visible > 0 ? mx + std::log(sum) : -std::numeric_limits<float>::infinity();
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t j = 0; j < visible; ++j) {
      const float pj = round_to(c.dtype, p[j] / sum);
      for (int64_t e = 0; e < d; ++e) acc[e] += pj * v[j * d + e];
    }
    for (int64_t e = 0; e < d; ++e) out.o.set_float(row * d + e, round_to(c.dtype, acc[e]));
  }
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

}  // namespace ts
