// Random per-head inputs (HeadInputs) for the tests of the reference and the naive attention:
// Q, K and V of some (batch, head) pairs of an AttentionSpec, drawn from N(0, scale^2) with a
// seed, rounded to the spec's dtype and never zero (a zero would hide a missed element), and a
// seed per test that is fresh on each run, printed, and fixed by TILESCOPE_TEST_SEED.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "base/attention_spec.h"
#include "base/head_inputs.h"
#include "tests/support/test_seed.h"

namespace ts::test {

using HeadPairs = std::vector<std::array<int32_t, 2>>;

inline HeadPairs all_query_pairs(const AttentionSpec& spec) {
  HeadPairs p;
  for (int32_t b = 0; b < spec.batch; ++b)
    for (int32_t h = 0; h < spec.heads_q; ++h) p.push_back({b, h});
  return p;
}

inline HeadPairs all_kv_pairs(const AttentionSpec& spec) {
  HeadPairs p;
  for (int32_t b = 0; b < spec.batch; ++b)
    for (int32_t h = 0; h < spec.heads_kv; ++h) p.push_back({b, h});
  return p;
}

inline HostTensor random_tensor(DType dtype, std::vector<int64_t> shape, std::mt19937_64& rng, double scale) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  std::normal_distribution<double> normal(0.0, scale);
  for (int64_t i = 0; i < t.numel(); ++i) {
    do {
      t.set_float(i, static_cast<float>(normal(rng)));
    } while (t.get_float(i) == 0.0f);
  }
  return t;
}

inline HeadInputs random_head_inputs(const AttentionSpec& spec, uint64_t seed, HeadPairs q_pairs, HeadPairs kv_pairs,
                                     double scale = 1.0) {
  std::mt19937_64 rng(seed);
  HeadInputs in;
  const int64_t nq = static_cast<int64_t>(q_pairs.size()), nkv = static_cast<int64_t>(kv_pairs.size());
  in.q_pairs = std::move(q_pairs);
  in.kv_pairs = std::move(kv_pairs);
  in.q = random_tensor(spec.dtype, {nq, spec.seq_q, spec.head_dim}, rng, scale);
  in.k = random_tensor(spec.dtype, {nkv, spec.seq_kv, spec.head_dim}, rng, scale);
  in.v = random_tensor(spec.dtype, {nkv, spec.seq_kv, spec.head_dim}, rng, 1.0);
  return in;
}

inline HeadInputs random_head_inputs(const AttentionSpec& spec, uint64_t seed, double scale = 1.0) {
  return random_head_inputs(spec, seed, all_query_pairs(spec), all_kv_pairs(spec), scale);
}

// A fresh seed (or TILESCOPE_TEST_SEED's), printed now and named by every failure in scope.
#define TS_PRINTED_SEED(seed_var)                                                       \
  TS_SEEDED(seed_var);                                                                  \
  std::printf("%s\n", ::ts::test::replay_line(seed_var).c_str())

}  // namespace ts::test
