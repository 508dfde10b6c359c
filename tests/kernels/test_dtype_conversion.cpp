// round_to_dtype and widen_f16 (base/dtype_conversion.h) against CUDA's own host conversions,
// over a sweep of float bit patterns and the edge values, and every fp16 value; and the naive
// attention (which rounds with it, row by row) against a per-element textbook version written
// here with CUDA's conversions, for every variant of the attention description.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "base/dtype_conversion.h"
#include "kernels/naive_attention.h"
#include "tests/kernels/random_head_inputs.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

float cuda_round(DType dtype, float x) {
  switch (dtype) {
    case DType::f32: return x;
    case DType::f16: return __half2float(__float2half_rn(x));
    case DType::bf16: return __bfloat162float(__float2bfloat16_rn(x));
  }
  return x;
}

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

std::vector<float> sweep_values(uint64_t seed) {
  std::vector<float> v;
  // Every 4093rd bit pattern from a random start: all exponents, both signs, subnormals.
  for (uint64_t u = seed % 4093; u <= 0xffffffffull; u += 4093) {
    float x;
    const uint32_t b = static_cast<uint32_t>(u);
    std::memcpy(&x, &b, sizeof x);
    v.push_back(x);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, inf, -inf, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 5.96e-8f, 2.98e-8f, 2.99e-8f,
                  1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256,
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), 3.3895e38f, 3.3896e38f})
    v.push_back(x);
  return v;
}

TEST(DtypeConversion, EqualsCudasConversionsBitForBit) {
  TS_SEEDED(seed);
  const std::vector<float> values = sweep_values(seed);
  for (DType dtype : {DType::f16, DType::bf16, DType::f32}) {
    SCOPED_TRACE(std::string(to_string(dtype)));
    std::vector<float> bulk = values;
    // Odd lengths and offsets: the 8-wide path and its tail both run.
    round_to_dtype(dtype, bulk.data(), 5);
    round_to_dtype(dtype, bulk.data() + 5, bulk.size() - 5);
    size_t mismatches = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const float want = cuda_round(dtype, values[i]);
      const float one = round_to_dtype(dtype, values[i]);
      if (std::isnan(want)) {
        mismatches += !std::isnan(bulk[i]) || !std::isnan(one);
      } else {
        mismatches += bits(bulk[i]) != bits(want) || bits(one) != bits(want);
      }
      if (mismatches == 1 && (std::isnan(want) ? !std::isnan(bulk[i]) : bits(bulk[i]) != bits(want)))
        ADD_FAILURE() << "first mismatch: " << values[i] << " (0x" << std::hex << bits(values[i]) << ") -> 0x"
                      << bits(bulk[i]) << ", CUDA 0x" << bits(want);
    }
    EXPECT_EQ(mismatches, 0u) << "of " << values.size();
  }
}

TEST(DtypeConversion, WideningEveryHalfEqualsCudas) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> out(all.size());
  widen_f16(all.data() + 3, all.size() - 3, out.data() + 3);  // an unaligned start, a tail
  widen_f16(all.data(), 3, out.data());
  for (uint32_t i = 0; i < all.size(); ++i) {
    __half_raw raw;
    raw.x = all[i];
    const float want = __half2float(__half(raw));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(out[i])) << i;
    } else {
      ASSERT_EQ(bits(out[i]), bits(want)) << i;
    }
  }
}

// The naive attention as it was first written, now with every variant of the attention
// description: element by element, CUDA's conversions, each row's keys and its kv head spelled
// out from base/attention_spec.h's definitions (an independent restatement, on purpose).
std::vector<float> textbook_naive_o(const AttentionSpec& s, const HeadInputs& in, int64_t b, int64_t h) {
  const int64_t sq = s.seq_q, skv = s.seq_kv, d = s.head_dim;
  const float scale = static_cast<float>(s.effective_scale());
  const int64_t qi = in.q_index(b, h), kv = in.kv_index(b, h / (s.heads_q / s.heads_kv));
  const int64_t q_len = s.q_lens.empty() ? sq : s.q_lens[static_cast<size_t>(b)];
  const int64_t kv_len = s.kv_lens.empty() ? skv : s.kv_lens[static_cast<size_t>(b)];
  auto sees = [&](int64_t i, int64_t j) {
    const int64_t diagonal = s.causal == CausalAlign::top_left ? i : i + kv_len - q_len;
    return i < q_len && j < kv_len && (s.causal == CausalAlign::none || j <= diagonal) &&
           (s.window_left < 0 || j >= diagonal - s.window_left) &&
           (s.window_right < 0 || j <= diagonal + s.window_right);
  };
  std::vector<float> o(static_cast<size_t>(sq * d));
  std::vector<float> p(static_cast<size_t>(skv));
  for (int64_t i = 0; i < sq; ++i) {
    const int64_t diagonal = s.causal == CausalAlign::top_left ? i : i + kv_len - q_len;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < skv; ++j) {
      if (!sees(i, j)) continue;
      float x = 0;
      for (int64_t e = 0; e < d; ++e)
        x += in.q.get_float((qi * sq + i) * d + e) *
             cuda_round(s.dtype, in.k.get_float((kv * skv + j) * d + e) * scale);
      x = cuda_round(s.dtype, x);
      if (s.softcap > 0) {
        const float cap = static_cast<float>(s.softcap);
        x = cuda_round(s.dtype, cuda_round(s.dtype, std::tanh(cuda_round(s.dtype, x / cap))) * cap);
      }
      if (!s.alibi_slopes.empty())
        x += -static_cast<float>(s.alibi_slopes[static_cast<size_t>(h)]) * static_cast<float>(std::abs(diagonal - j));
      p[static_cast<size_t>(j)] = x;
      mx = std::max(mx, x);
    }
    float sum = 0;
    for (int64_t j = 0; j < skv; ++j)
      if (sees(i, j)) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
    for (int64_t e = 0; e < d; ++e) {
      float acc = 0;
      for (int64_t j = 0; j < skv; ++j)
        if (sees(i, j))
          acc += cuda_round(s.dtype, p[static_cast<size_t>(j)] / sum) * in.v.get_float((kv * skv + j) * d + e);
      o[static_cast<size_t>(i * d + e)] = cuda_round(s.dtype, acc);
    }
  }
  return o;
}

TEST(DtypeConversion, NaiveAttentionEqualsTheElementByElementTextbook) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (DType dtype : {DType::f16, DType::bf16}) {
    for (int variant = 0; variant < 4; ++variant) {
      AttentionSpec s;
      s.dtype = dtype;
      s.head_dim = variant == 3 ? 24 : 32;
      s.seq_q = 1 + static_cast<int64_t>(rng() % 40);
      s.seq_kv = 1 + static_cast<int64_t>(rng() % 90);
      if (variant == 1) s.causal = CausalAlign::bottom_right;
      if (variant == 2) {  // GQA, top-left causal, a window, softcap, a custom scale
        s.heads_q = 4;
        s.heads_kv = 2;
        s.causal = CausalAlign::top_left;
        s.window_left = 9;
        s.softcap = 2.5;
        s.scale = 0.3;
      }
      if (variant == 3) {  // ALiBi, per-batch lengths, a window on both sides
        s.batch = 2;
        s.heads_q = 2;
        s.heads_kv = 1;
        s.alibi_slopes = {0.5, 0.0625};
        s.q_lens = {s.seq_q, s.seq_q / 2};
        s.kv_lens = {s.seq_kv / 2, s.seq_kv};
        s.window_left = 6;
        s.window_right = 2;
      }
      validate(s);
      const HeadInputs in = test::random_head_inputs(s, rng());
      const NaiveOutput naive = naive_attention(s, in, 1);
      SCOPED_TRACE(describe(s));
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t h = 0; h < s.heads_q; ++h) {
          const std::vector<float> want = textbook_naive_o(s, in, b, h);
          const int64_t first = (b * s.heads_q + h) * s.seq_q * s.head_dim;
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_EQ(bits(naive.o.get_float(first + static_cast<int64_t>(i))), bits(want[i]))
                << "batch " << b << ", head " << h << ", element " << i;
        }
    }
  }
}

}  // namespace
}  // namespace ts
