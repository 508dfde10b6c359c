// A trace made by hand from the schema (tests/trace/handwritten_trace.h: a user's stage table,
// non-uniform splits with a split of two non-adjacent key ranges, normalised base-2 LSE states,
// GQA, inputs per query head and per kv head) is read back as written and holds, by an
// independent brute-force computation from the file's own description and inputs, the states
// its headers describe; with a planted error it is still a valid trace (a kernel error is not a
// format error).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "instrumentation/trace/trace_file.h"
#include "tests/trace/handwritten_trace.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

// Brute force from the definitions (base/attention_spec.h, tilescope/event.h), in long double:
// row i of (batch, head) over the keys of `ranges` it sees, normalised with a base-2 LSE. Shares
// no code with the reference.
struct BruteRow {
  long double lse2 = -INFINITY;
  std::vector<long double> o;
};
BruteRow brute_force(const AttentionSpec& s, const HeadInputs& in, int32_t batch, int32_t head, int64_t i,
                     std::span<const KeyRange> ranges) {
  const int32_t qi = in.q_index(batch, head), ki = in.kv_index(batch, static_cast<int32_t>(head / (s.heads_q / s.heads_kv)));
  const int64_t d = s.head_dim;
  const long double scale = s.scale > 0 ? s.scale : 1.0L / std::sqrt(static_cast<long double>(d));
  std::vector<bool> in_ranges(static_cast<size_t>(s.seq_kv), false);
  for (const KeyRange& r : ranges)
    for (int64_t j = r.begin; j < r.end; ++j) in_ranges[static_cast<size_t>(j)] = true;
  const int64_t last_visible = s.causal == CausalAlign::bottom_right ? i + s.seq_kv - s.seq_q : s.seq_kv - 1;
  std::vector<long double> scores;
  std::vector<int64_t> keys;
  for (int64_t j = 0; j < s.seq_kv; ++j) {
    if (!in_ranges[static_cast<size_t>(j)] || j > last_visible) continue;
    long double dot = 0;
    for (int64_t c = 0; c < d; ++c)
      dot += static_cast<long double>(in.q.get_float((qi * s.seq_q + i) * d + c)) *
             in.k.get_float((ki * s.seq_kv + j) * d + c);
    scores.push_back(scale * dot);
    keys.push_back(j);
  }
  BruteRow out;
  out.o.assign(static_cast<size_t>(d), 0.0L);
  if (scores.empty()) return out;
  long double m = -INFINITY, sum = 0;
  for (long double x : scores) m = std::max(m, x);
  for (size_t k = 0; k < scores.size(); ++k) {
    const long double p = std::exp(scores[k] - m);
    sum += p;
    for (int64_t c = 0; c < d; ++c) out.o[static_cast<size_t>(c)] += p * in.v.get_float((ki * s.seq_kv + keys[k]) * d + c);
  }
  for (long double& x : out.o) x /= sum;
  out.lse2 = (m + std::log(sum)) * std::numbers::log2e_v<long double>;
  return out;
}

TEST(HandwrittenTrace, ReadsBackAsWrittenAndHoldsTheStatesItsHeadersDescribe) {
  TS_SEED_TRACE();
  TempDir dir;
  const test::HandwrittenTrace hw = test::make_handwritten_trace(test::run_seed());
  const auto path = dir / "handwritten.trace.safetensors";
  test::write_handwritten_trace(path, hw);
  const TraceFile t = TraceFile::open(path);

  EXPECT_EQ(t.format_version(), 2);
  EXPECT_EQ(t.stages(), (std::vector<StageInfo>{{"my_partial", StageKind::state, 0},
                                                {"combine", StageKind::merge, 1},
                                                {"epilogue", StageKind::final, 1}}));
  EXPECT_EQ(t.attention(), hw.spec);
  EXPECT_EQ(t.attention().group_size(), 2);
  EXPECT_EQ(*t.metadata_value(trace_meta::kernel), "my_gqa_decode");
  // 2 batches x 4 heads x 2 row blocks: 4 partials, 4 combines and the epilogue each.
  ASSERT_EQ(t.num_events(), size_t(2 * 4 * 2 * 9));
  EXPECT_EQ(t.events_per_stage(), (std::vector<size_t>{64, 64, 16}));
  EXPECT_TRUE(t.missing().empty());
  EXPECT_TRUE(test::same_bits(t.headers().data(), hw.events.headers.data(), t.num_events() * sizeof(EventHeader)));
  EXPECT_TRUE(test::same_bits(t.o_all().data(), hw.events.o.data(), hw.events.o.size() * 4));
  const std::optional<HeadInputs> in = t.read_inputs();
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->q_pairs.size(), 8u) << "per query head";
  EXPECT_EQ(in->kv_pairs.size(), 4u) << "per kv head";
  EXPECT_EQ(in->k.bytes, hw.inputs.k.bytes);

  // The split of two ranges, and a combine's list of the merged splits' ranges.
  const EventHeader& partial2 = t.header(hw.find(test::kMyPartialStage, 1, 3, 8, 2));
  ASSERT_EQ(partial2.num_key_ranges, 2);
  EXPECT_EQ(partial2.keys[1].begin, 180);
  EXPECT_EQ(partial2.kv_head, 1) << "query head 3 reads kv head 1";
  EXPECT_EQ(t.header(hw.find(test::kCombineStage, 0, 0, 0, 3)).num_key_ranges, 5);

  // Every state is what its header says, computed from the file's own description and inputs.
  const AttentionSpec& s = t.attention();
  const size_t rows = size_t(t.max_rows()), d = size_t(t.head_dim());
  double worst_o = 0, worst_lse = 0;
  for (size_t i = 0; i < t.num_events(); ++i) {
    const EventHeader& h = t.header(i);
    const bool final = t.stages()[size_t(h.stage)].kind == StageKind::final;
    EXPECT_EQ(h.convention, final ? kNormalized : kNormalized | kLogBase2) << i;
    const std::vector<KeyRange> all_keys = {{0, static_cast<int32_t>(s.seq_kv)}};
    const std::span<const KeyRange> ranges =
        final ? std::span<const KeyRange>(all_keys) : std::span<const KeyRange>(h.keys, size_t(h.num_key_ranges));
    for (int32_t r = 0; r < h.rows; ++r) {
      const BruteRow want = brute_force(s, *in, h.batch, h.head, h.q_begin + r, ranges);
      const double lse = final ? double(want.lse2 / std::numbers::log2e_v<long double>) : double(want.lse2);
      worst_lse = std::max(worst_lse, std::abs(double(t.m(i)[size_t(r)]) - lse) / std::max(1.0, std::abs(lse)));
      for (size_t c = 0; c < d; ++c)
        worst_o = std::max(worst_o, std::abs(double(t.o(i)[size_t(r) * d + c]) - double(want.o[c])));
    }
    for (size_t r = size_t(h.rows); r < rows; ++r) EXPECT_TRUE(std::isnan(t.m(i)[r])) << "rows past the event's";
  }
  EXPECT_LE(worst_o, 1e-6);
  EXPECT_LE(worst_lse, 1e-6);
  // The output as stored is the epilogue's, rounded to fp16; its LSE the epilogue's.
  const std::optional<HostTensor> out = t.read_output();
  const std::optional<std::vector<float>> lse = t.read_output_lse();
  ASSERT_TRUE(out && lse);
  const size_t e = hw.find(test::kEpilogueStage, 1, 2, 8);
  for (size_t r = 0; r < 5; ++r) {
    const int64_t row = (1 * 4 + 2) * 13 + 8 + int64_t(r);
    EXPECT_EQ((*lse)[size_t(row)], t.m(e)[r]);
    for (size_t c = 0; c < d; ++c)
      EXPECT_NEAR(out->get_float(row * 32 + int64_t(c)), t.o(e)[r * d + c],
                  0x1p-10 * std::max(1.0f, std::abs(t.o(e)[r * d + c])))  // an fp16 rounding
          << r << " " << c;
  }
}

TEST(HandwrittenTrace, APlantedKernelErrorIsStillAValidTrace) {
  TS_SEED_TRACE();
  TempDir dir;
  test::HandwrittenTrace hw = test::make_handwritten_trace(test::run_seed());
  const test::HandwrittenTrace correct = hw;
  const size_t bad = hw.find(test::kCombineStage, 1, 2, 0, 2);  // after merging the two-range split
  test::perturb_o(hw, bad, 3, 17, 0.25f);
  const auto path = dir / "planted.trace.safetensors";
  test::write_handwritten_trace(path, hw);
  const TraceFile t = TraceFile::open(path);  // a kernel error is not a format error
  ASSERT_EQ(t.num_events(), correct.events.size());
  // Exactly the planted element differs from the correct trace, by the planted amount.
  size_t differing = 0;
  for (size_t i = 0; i < t.o_all().size(); ++i) {
    const float got = t.o_all()[i], want = correct.events.o[i];
    if (std::isnan(got) && std::isnan(want)) continue;
    if (got != want) {
      ++differing;
      EXPECT_EQ(i, (bad * size_t(t.max_rows()) + 3) * size_t(t.head_dim()) + 17);
      EXPECT_NEAR(got - want, 0.25f, 1e-6f);
    }
  }
  EXPECT_EQ(differing, 1u);
  EXPECT_TRUE(test::same_bits(t.m_all().data(), correct.events.m.data(), correct.events.m.size() * 4));
}

}  // namespace
}  // namespace ts
