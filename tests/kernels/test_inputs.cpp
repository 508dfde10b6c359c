// Seeded random inputs (reproducible, distributed as asked, presets doing what they say) and
// the checks of inputs against a config (clear errors naming tensor and index).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <random>
#include <stdexcept>

#include "base/random_inputs.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

AttentionConfig small(DType dt = DType::f32) {
  AttentionConfig c;
  c.batch = 2;
  c.heads = 3;
  c.seq_q = 50;
  c.seq_kv = 70;
  c.head_dim = 32;
  c.dtype = dt;
  return c;
}

TEST(RandomInputs, SameSeedSameBytesOtherSeedOtherBytes) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    const AttentionInputs a = make_random_inputs(small(dt), {.seed = 42});
    const AttentionInputs b = make_random_inputs(small(dt), {.seed = 42});
    const AttentionInputs c = make_random_inputs(small(dt), {.seed = 43});
    EXPECT_EQ(a.q.bytes, b.q.bytes);
    EXPECT_EQ(a.v.bytes, b.v.bytes);
    EXPECT_NE(a.q.bytes, c.q.bytes);
    EXPECT_NE(a.q.bytes, a.k.bytes) << "q and k are different streams";
    EXPECT_EQ(a.q.shape, (std::vector<int64_t>{2, 3, 50, 32}));
    EXPECT_EQ(a.k.shape, (std::vector<int64_t>{2, 3, 70, 32}));
    EXPECT_EQ(a.q.dtype, dt);
  }
}

// The sink of make_random_head_inputs sees each tensor's bytes once, in order, exactly as the
// tensors hold them: pairs in a random order, a kv head over several pieces (more than 2^20
// elements), GQA, one thread and several; a sink that throws stops the making with its error.
TEST(RandomInputs, TheSinkSeesEachTensorsBytesInOrder) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  AttentionSpec a;
  a.batch = 2;
  a.heads_q = 4;
  a.heads_kv = 2;
  a.seq_q = 3;
  a.seq_kv = 8192 + static_cast<int64_t>(rng() % 2048);  // x 160 > 2^20: two pieces per kv head
  a.head_dim = 160;
  for (DType dt : {DType::f32, DType::bf16})
    for (unsigned workers : {1u, 3u}) {
      a.dtype = dt;
      SCOPED_TRACE(std::string(to_string(dt)) + ", " + std::to_string(workers) + " workers");
      std::vector<std::array<int32_t, 2>> q_pairs, kv_pairs;
      for (int32_t b = 0; b < 2; ++b) {
        for (int32_t h = 0; h < 4; ++h) q_pairs.push_back({b, h});
        for (int32_t h = 0; h < 2; ++h) kv_pairs.push_back({b, h});
      }
      std::shuffle(q_pairs.begin(), q_pairs.end(), rng);
      std::shuffle(kv_pairs.begin(), kv_pairs.end(), rng);
      kv_pairs.pop_back();  // a pair left out
      const RandomInputSpec spec{.seed = rng()};
      std::array<std::vector<std::byte>, 3> seen;
      std::array<size_t, 3> calls{};
      const HeadInputs in = make_random_head_inputs(a, spec, q_pairs, kv_pairs, workers, {},
                                                    [&](InputTensor t, std::span<const std::byte> bytes) {
                                                      auto& v = seen[static_cast<size_t>(t)];
                                                      v.insert(v.end(), bytes.begin(), bytes.end());
                                                      ++calls[static_cast<size_t>(t)];
                                                    });
      EXPECT_EQ(seen[0], in.q.bytes);
      EXPECT_EQ(seen[1], in.k.bytes);
      EXPECT_EQ(seen[2], in.v.bytes);
      EXPECT_GE(calls[1], 2 * kv_pairs.size()) << "a kv head is handed over in pieces";
      // ...and the bytes are make_random_head_inputs' without a sink.
      const HeadInputs plain = make_random_head_inputs(a, spec, q_pairs, kv_pairs, workers);
      EXPECT_EQ(plain.k.bytes, in.k.bytes);
      EXPECT_EQ(plain.v.bytes, in.v.bytes);
    }
  EXPECT_THROW(make_random_head_inputs(a, {.seed = 1}, {{0, 0}}, {{0, 0}}, 2, {},
                                       [](InputTensor t, std::span<const std::byte>) {
                                         if (t == InputTensor::v) throw std::runtime_error("sink full");
                                       }),
               std::runtime_error);
}

TEST(RandomInputs, MomentsFollowTheDistributionAndScale) {
  for (auto dist : {InputDistribution::normal, InputDistribution::uniform}) {
    const AttentionInputs in = make_random_inputs(small(), {.seed = 9, .distribution = dist, .scale = 0.5});
    const std::vector<double> x = in.v.to_double();
    double mean = 0, sq = 0, lo = 1e9, hi = -1e9;
    for (double v : x) {
      mean += v;
      sq += v * v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    mean /= double(x.size());
    const double sd = std::sqrt(sq / double(x.size()) - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.02);
    if (dist == InputDistribution::normal) {
      EXPECT_NEAR(sd, 0.5, 0.02);
      EXPECT_LT(lo, -1.5);  // tails exist
    } else {
      EXPECT_NEAR(sd, 0.5 / std::sqrt(3.0), 0.01);
      EXPECT_GE(lo, -0.5);
      EXPECT_LT(hi, 0.5);
    }
  }
}

TEST(RandomInputs, Presets) {
  const AttentionConfig c = small();
  const AttentionInputs base = make_random_inputs(c, {.seed = 4});
  const AttentionInputs large = make_random_inputs(c, {.seed = 4, .preset = InputPreset::large_logits});
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_FLOAT_EQ(large.q.get_float(i), 4.0f * base.q.get_float(i));
    EXPECT_FLOAT_EQ(large.v.get_float(i), base.v.get_float(i));
  }
  const AttentionInputs equal = make_random_inputs(c, {.seed = 4, .preset = InputPreset::all_equal_scores});
  for (int64_t bh = 0; bh < 6; ++bh)
    for (int64_t j = 0; j < 70; ++j)
      for (int64_t e = 0; e < 32; ++e)
        ASSERT_EQ(equal.k.get_float((bh * 70 + j) * 32 + e), equal.k.get_float(bh * 70 * 32 + e));
  EXPECT_NE(equal.k.get_float(0), equal.k.get_float(70 * 32)) << "heads differ";
  EXPECT_THROW(make_random_inputs(c, {.seed = 1, .scale = 0.0}), ConfigError);
  EXPECT_THROW(make_random_inputs(c, {.seed = 1, .scale = NAN}), ConfigError);
}

TEST(RandomInputs, NamesRoundTrip) {
  for (auto p : {InputPreset::none, InputPreset::large_logits, InputPreset::all_equal_scores})
    EXPECT_EQ(preset_from_name(to_string(p)), p);
  for (auto d : {InputDistribution::normal, InputDistribution::uniform})
    EXPECT_EQ(distribution_from_name(to_string(d)), d);
  EXPECT_FALSE(preset_from_name("huge"));
}

TEST(CheckInputs, AcceptsMatchingInputs) {
  const AttentionConfig c = small(DType::bf16);
  EXPECT_NO_THROW(check_inputs(c, make_random_inputs(c, {.seed = 1})));
}

TEST(CheckInputs, NamesTheTensorAndTheProblem) {
  const AttentionConfig c = small(DType::f16);
  const AttentionInputs good = make_random_inputs(c, {.seed = 1});
  auto expect_error = [&](const AttentionInputs& in, const std::string& tensor,
                          const std::string& fragment) {
    try {
      check_inputs(c, in);
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const InputError& e) {
      EXPECT_EQ(e.tensor(), tensor);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  AttentionInputs bad = good;
  bad.k.shape = {2, 3, 71, 32};
  expect_error(bad, "k", "[2, 3, 70, 32]");
  bad = good;
  bad.q.dtype = DType::bf16;
  expect_error(bad, "q", "bf16");
  bad = good;
  bad.v.set_float(((1 * 3 + 2) * 70 + 5) * 32 + 7, std::numeric_limits<float>::quiet_NaN());
  expect_error(bad, "v", "NaN at index [1, 2, 5, 7]");
  bad = good;
  bad.q.set_float(3, std::numeric_limits<float>::infinity());
  expect_error(bad, "q", "Inf at index [0, 0, 0, 3]");
  bad = good;
  bad.v.bytes.pop_back();
  expect_error(bad, "v", "bytes");
}

}  // namespace
}  // namespace ts
