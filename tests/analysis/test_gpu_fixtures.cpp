// Traces captured on a GPU (an H200; assets/traces, docs/gpu-validation.md) open on a machine
// without one, are analysed there from what they hold (config, inputs, events), name the same
// divergence as the fault's CPU run, and agree event by event with the same problem captured
// here on the CPU backend from the seed in their metadata.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/analyze_run.h"
#include "app/model/capture/run_capture.h"
#include "app/model/trace_session.h"

namespace ts {
namespace {

std::filesystem::path fixture(const char* name) { return std::filesystem::path(TS_ASSETS_DIR) / "traces" / name; }

// The same problem, captured here on the CPU backend from the fixture's seed.
RunView recapture_on_cpu(const RunView& gpu) {
  CaptureSpec spec;
  spec.config = *gpu.config;
  spec.backend = Backend::cpu;
  spec.inputs = RandomInputSpec{.seed = std::stoull(gpu.metadata.at("inputs_seed"))};
  spec.cpu_workers = 2;
  return run_capture(spec).view;
}

TEST(GpuFixtures, SplitkDoubleCountLNamesTheReduceAtSplitZero) {
  const RunView run = open_run(fixture("splitk_double_count_l.gpu.trace.safetensors"));
  ASSERT_EQ(run.metadata.at("backend"), "gpu");
  ASSERT_EQ(run.config->fault, Fault::double_count_l);
  const AnalysisReport r = analyze_run(run);
  EXPECT_EQ(r.verdict, Verdict::divergence);
  ASSERT_TRUE(r.first_divergence.found);
  EXPECT_EQ(r.stage_name(r.first_divergence.header.stage), "splitk.reduce");
  EXPECT_EQ(r.first_divergence.header.q_begin, 0);
  EXPECT_EQ(r.first_divergence.header.split, 0);
  EXPECT_EQ(r.symptom.kind, "reduce_scaled_by_l") << r.symptom.line;
  for (const StageReport& s : r.stages) {
    if (s.info.name != "splitk.partial") continue;
    EXPECT_EQ(s.events_failing, 0u) << "every partial matches";
  }

  const ABReport ab = compare_runs(run, recapture_on_cpu(run));
  EXPECT_TRUE(ab.inputs_identical) << ab.inputs_note;
  EXPECT_TRUE(ab.tilings_match);
  EXPECT_EQ(ab.compared_at, "every event");
  EXPECT_EQ(ab.differing, 0u) << ab.symptom.line;
  EXPECT_EQ(ab.symptom.kind, "both_diverge") << ab.symptom.line;
}

TEST(GpuFixtures, CorrectFa1CausalIsCleanAndAgreesWithTheCpu) {
  const RunView run = open_run(fixture("fa1_causal_fp16.gpu.trace.safetensors"));
  ASSERT_EQ(run.metadata.at("backend"), "gpu");
  ASSERT_EQ(run.config->fault, Fault::none);
  ASSERT_TRUE(run.config->causal);
  const AnalysisReport r = analyze_run(run);
  EXPECT_EQ(r.verdict, Verdict::clean) << r.symptom.line;
  EXPECT_EQ(r.symptom.kind, "clean");

  const ABReport ab = compare_runs(run, recapture_on_cpu(run));
  EXPECT_TRUE(ab.inputs_identical) << ab.inputs_note;
  EXPECT_EQ(ab.compared_at, "every event");
  EXPECT_GT(ab.compared, 0u);
  EXPECT_EQ(ab.differing, 0u) << ab.symptom.line;
  EXPECT_EQ(ab.symptom.kind, "agree") << ab.symptom.line;
}

}  // namespace
}  // namespace ts
