// round_to_dtype and widen_f16 (base/dtype_conversion.h) against CUDA's own host conversions,
// over a sweep of float bit patterns and the edge values, and every fp16 value; and the naive
// attention (which rounds with it, row by row) against a per-element textbook version written
// here with CUDA's conversions.
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
#include "base/random_inputs.h"
#include "tests/model/test_seed.h"

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

// The naive attention as it was first written: element by element, CUDA's conversions.
std::vector<float> textbook_naive_o(const AttentionConfig& c, const AttentionInputs& in) {
  const int64_t sq = c.seq_q, skv = c.seq_kv, d = c.head_dim;
  const float scale = static_cast<float>(c.effective_scale());
  std::vector<float> o(static_cast<size_t>(sq * d));
  std::vector<float> p(static_cast<size_t>(skv));
  for (int64_t i = 0; i < sq; ++i) {
    const int64_t visible = c.causal ? std::clamp<int64_t>(i + skv - sq + 1, 0, skv) : skv;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < visible; ++j) {
      float s = 0;
      for (int64_t e = 0; e < d; ++e)
        s += in.q.get_float(i * d + e) * cuda_round(c.dtype, in.k.get_float(j * d + e) * scale);
      p[j] = cuda_round(c.dtype, s);
      mx = std::max(mx, p[j]);
    }
    float sum = 0;
    for (int64_t j = 0; j < visible; ++j) sum += (p[j] = std::exp(p[j] - mx));
    for (int64_t e = 0; e < d; ++e) {
      float acc = 0;
      for (int64_t j = 0; j < visible; ++j) acc += cuda_round(c.dtype, p[j] / sum) * in.v.get_float(j * d + e);
      o[static_cast<size_t>(i * d + e)] = cuda_round(c.dtype, acc);
    }
  }
  return o;
}

TEST(DtypeConversion, NaiveAttentionEqualsTheElementByElementTextbook) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (DType dtype : {DType::f16, DType::bf16}) {
    for (bool causal : {false, true}) {
      AttentionConfig c;
      c.dtype = dtype;
      c.causal = causal;
      c.head_dim = 32;
      c.seq_q = 1 + static_cast<int64_t>(rng() % 40);
      c.seq_kv = 1 + static_cast<int64_t>(rng() % 90);
      const AttentionInputs in = make_random_inputs(c, {.seed = rng()});
      const NaiveOutput naive = naive_attention(c, in, 1);
      const std::vector<float> want = textbook_naive_o(c, in);
      SCOPED_TRACE(std::string(to_string(dtype)) + (causal ? " causal" : "") + " Sq=" + std::to_string(c.seq_q) +
                   " Skv=" + std::to_string(c.seq_kv));
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(bits(naive.o.get_float(static_cast<int64_t>(i))), bits(want[i])) << i;
    }
  }
}

}  // namespace
}  // namespace ts
