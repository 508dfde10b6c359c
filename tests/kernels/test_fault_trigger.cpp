// why_fault_cannot_show (kernels/fault_trigger.h) against the kernels themselves: on random
// configs, a faulty kernel whose path the config does not take runs clean, and one whose path it
// takes diverges; a clean report of a faulty kernel says which fault and why it did not show.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "app/model/analysis/analyze_run.h"
#include "base/kernel_list.h"
#include "kernels/fault_trigger.h"
#include "tests/analysis/launched_run.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::make_config;

// A small random config for `fault`, near the edges the faults live on: few or many splits,
// seq_q around seq_kv, one kv tile or several.
AttentionConfig random_config(Fault fault, std::mt19937_64& rng) {
  std::vector<KernelKind> kernels;
  for (KernelKind k : built_kernels())
    if (fault_applies(fault, k)) kernels.push_back(k);
  const KernelKind kernel = kernels[rng() % kernels.size()];
  // fa2, splitk2: 16-bit inputs, head dims 64 and 128.
  const bool tensor_cores = kernel == KernelKind::fa2 || kernel == KernelKind::splitk2;
  const int64_t head_dim = tensor_cores ? 64 : rng() % 2 ? 32 : 64;
  const DType dtype = tensor_cores ? DType::bf16 : DType::f32;
  const int64_t seq_kv = 2 + static_cast<int64_t>(rng() % 300);
  const int64_t seq_q = 1 + static_cast<int64_t>(rng() % (seq_kv + 40));
  const bool causal = rng() % 3 != 0;
  const int64_t splits = splits_kv(kernel) ? 1 + static_cast<int64_t>(rng() % 6) : 0;
  AttentionConfig c = make_config(kernel, fault, dtype, head_dim, seq_q, seq_kv, causal, splits);
  // Half the configs with a sliding window (narrow ones too, down to the diagonal alone, where
  // a row sees one key, or keys in one tile), some with GQA and a softcap.
  if (rng() % 2) {
    const int64_t widths[] = {-1, 0, 1, 5, 40, 150};
    c.window_left = widths[rng() % 6];
    c.window_right = widths[rng() % 6];
  }
  if (rng() % 3 == 0) {
    c.heads = 2;
    c.heads_kv = 1;
  }
  if (rng() % 3 == 0) c.softcap = 10.0;
  return c;
}

TEST(FaultTrigger, AFaultShowsExactlyWhenItsPathIsTaken) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  int shown = 0, not_shown = 0;
  for (const FaultInfo& f : all_faults()) {
    // none has no path; missing_barrier is a race (its schedules: tests/analysis/test_ab_compare.cpp).
    if (f.fault == Fault::none || f.fault == Fault::missing_barrier) continue;
    for (int i = 0; i < 12; ++i) {
      test::LaunchSpec spec;
      spec.config = random_config(f.fault, rng);
      spec.seed = rng();
      const RunView run = test::launch_run(spec);
      const AnalysisReport r = analyze_run(run);
      const std::string why = why_fault_cannot_show(*run.config, *r.tiling);
      SCOPED_TRACE(std::string(f.name) + " " + std::string(to_string(spec.config.kernel)) + " Sq=" +
                   std::to_string(spec.config.seq_q) + " Skv=" + std::to_string(spec.config.seq_kv) + " D=" +
                   std::to_string(spec.config.head_dim) + (spec.config.causal ? " causal" : "") + " window " +
                   window_text(spec.config.window_left, spec.config.window_right) + " Hkv=" +
                   std::to_string(spec.config.kv_heads()) + " softcap " + std::to_string(spec.config.softcap) +
                   " splits=" + std::to_string(r.tiling->num_splits) + ": " + why);
      EXPECT_EQ(r.clean(), !why.empty()) << r.symptom.line;
      if (r.clean()) {
        ++not_shown;
        EXPECT_NE(r.symptom.line.find("built with fault " + std::string(f.name)), std::string::npos) << r.symptom.line;
        EXPECT_NE(r.symptom.line.find(why), std::string::npos) << r.symptom.line;
      } else {
        ++shown;
      }
    }
  }
  EXPECT_GT(shown, 0);
  EXPECT_GT(not_shown, 0) << "the random configs must reach both sides";
}

AttentionConfig windowed(AttentionConfig c, int64_t left, int64_t right) {
  c.window_left = left;
  c.window_right = right;
  return c;
}

TEST(FaultTrigger, EachFaultHasAConfigItCannotShowIn) {
  const auto fa1 = KernelKind::fa1, splitk = KernelKind::splitk, fa2 = KernelKind::fa2;
  struct Case {
    AttentionConfig config;
    const char* why;  // a piece of the reason
  };
  const Case cases[] = {
      {make_config(splitk, Fault::double_count_l, DType::f32, 64, 4, 1, false, 1), "more than one key"},
      {make_config(fa1, Fault::masked_nan, DType::f32, 64, 100, 40, false), "without --causal"},
      {make_config(fa1, Fault::masked_nan, DType::f32, 64, 40, 100, true), "--seq-q exceeds --seq-kv"},
      {make_config(splitk, Fault::masked_nan, DType::f32, 64, 300, 300, true, 1), "every split"},
      {make_config(splitk, Fault::empty_split, DType::f32, 64, 16, 1000, false, 2), "every one of the 2 splits"},
      {make_config(splitk, Fault::partial_layout, DType::f32, 64, 16, 1000, false, 1), "one split"},
      {make_config(splitk, Fault::partial_layout, DType::f32, 64, 1, 1000, false, 4), "one query row"},
      {make_config(fa1, Fault::per_tile_softmax, DType::f32, 64, 64, 20, false), "more than one kv tile"},
      {make_config(splitk, Fault::stale_accumulator, DType::f32, 64, 8, 1000, false, 16), "more than one kv tile"},
      {make_config(fa1, Fault::missing_barrier, DType::f32, 64, 64, 20, false), "more than one kv tile"},
      // fragment_rows: one key, every row sees it: every output is that key's V row.
      {make_config(fa2, Fault::fragment_rows, DType::bf16, 64, 40, 1, false), "exchanging them changes nothing"},
      {make_config(fa2, Fault::stale_accumulator, DType::f16, 128, 64, 20, false), "more than one kv tile"},
      // splitk2: 2 kv tiles of 64 keys in 2 splits of one; one key, every row sees it: every
      // split's O is 0 or that key's V row.
      {make_config(KernelKind::splitk2, Fault::stale_accumulator, DType::bf16, 64, 100, 128, false, 2),
       "1 per split"},
      {make_config(KernelKind::splitk2, Fault::fragment_rows, DType::bf16, 64, 40, 1, false, 2), "of each split"},
      {make_config(KernelKind::splitk2, Fault::empty_split, DType::f16, 128, 16, 1000, false, 2), "every one of the 2 splits"},
      // Under windows: the diagonal alone (every split's l is 0 or 1; FA-1 rows see one key, in
      // one tile, though blocks walk two); rows' keys that start at their diagonal and end at the
      // last key, all inside the one tile FA-1 visits; a window of 21 keys at the end of 600, in
      // one kv tile.
      {windowed(make_config(splitk, Fault::double_count_l, DType::f32, 64, 16, 1000, true, 3), 0, 0),
       "more than one key"},
      {windowed(make_config(fa1, Fault::per_tile_softmax, DType::f32, 64, 200, 210, false), 0, 0),
       "no row sees keys in more than one kv tile"},
      {windowed(make_config(fa1, Fault::masked_nan, DType::f32, 64, 64, 64, false), 0, -1), "under this mask"},
      {windowed(make_config(fa1, Fault::stale_accumulator, DType::f32, 64, 1, 600, true), 20, -1),
       "it needs a wider --window"},
  };
  TS_SEEDED(seed);
  for (const Case& c : cases) {
    test::LaunchSpec spec;
    spec.config = c.config;
    spec.seed = seed;
    const AnalysisReport r = analyze_run(test::launch_run(spec));
    SCOPED_TRACE(std::string(to_string(c.config.fault)) + ": " + r.symptom.line);
    EXPECT_TRUE(r.clean());
    EXPECT_NE(r.symptom.line.find(c.why), std::string::npos);
  }
  // A race is never ruled out by the config alone: the reason says how to expose it.
  const AttentionConfig racy = make_config(fa1, Fault::missing_barrier, DType::f32, 64, 64, 512, false);
  EXPECT_NE(why_fault_cannot_show(racy, make_tiling(racy, kCpuNominalSmCount)).find("perturbation seed"), std::string::npos);
  // The correct kernel has nothing to explain.
  const AttentionConfig ok = make_config(fa1, Fault::none, DType::f32, 64, 64, 512, false);
  EXPECT_EQ(why_fault_cannot_show(ok, make_tiling(ok, kCpuNominalSmCount)), "");
}

}  // namespace
}  // namespace ts
