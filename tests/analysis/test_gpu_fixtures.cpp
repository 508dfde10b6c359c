// Traces captured on a GPU (an H200; assets/traces, docs/gpu-validation.md) open on a machine
// without one, are analysed there from what they hold (config, inputs, events), name the same
// divergence as the fault's CPU run, and agree event by event with the same problem captured
// here on the CPU backend from the seed in their metadata.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/analyze_run.h"
#include "app/model/capture/run_capture.h"
#include "app/model/trace_session.h"
#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/tensor_files.h"
#include "tests/support/temp_dir.h"

namespace ts {
namespace {

std::filesystem::path fixture(const char* name) { return std::filesystem::path(TS_ASSETS_DIR) / "traces" / name; }

// The same problem, captured here on the CPU backend on the fixture's own inputs (they were
// generated from its seed by the generator of that time; base/random_inputs.h's generator has
// changed since, so the seed alone no longer gives them): written to one .safetensors file
// holding q, k and v as [batch, heads, seq, head_dim], which the fixture holds for every head.
RunView recapture_on_cpu(const RunView& gpu, const std::filesystem::path& dir) {
  const AttentionConfig& c = *gpu.config;
  const HeadInputs& in = gpu.inputs;
  EXPECT_EQ(static_cast<int64_t>(in.q_pairs.size()), c.batch * c.heads) << "the fixture traced every head";
  for (size_t i = 0; i < in.q_pairs.size(); ++i)
    EXPECT_EQ(int64_t{in.q_pairs[i][0]} * c.heads + in.q_pairs[i][1], static_cast<int64_t>(i)) << "batch-major pairs";
  HostTensor q = in.q, k = in.k, v = in.v;
  q.shape = {c.batch, c.heads, c.seq_q, c.head_dim};
  k.shape = v.shape = {c.batch, c.heads, c.seq_kv, c.head_dim};
  const auto file = dir / "qkv.safetensors";
  const std::vector<TensorToWrite> tensors{tensor_to_write("q", q), tensor_to_write("k", k), tensor_to_write("v", v)};
  write_safetensors(file, tensors, {});
  CaptureSpec spec;
  spec.config = c;
  spec.backend = Backend::cpu;
  spec.inputs = InputFiles{{file}};
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

  test::TempDir dir;
  const ABReport ab = compare_runs(run, recapture_on_cpu(run, dir.path()));
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

  test::TempDir dir;
  const ABReport ab = compare_runs(run, recapture_on_cpu(run, dir.path()));
  EXPECT_TRUE(ab.inputs_identical) << ab.inputs_note;
  EXPECT_EQ(ab.compared_at, "every event");
  EXPECT_GT(ab.compared, 0u);
  EXPECT_EQ(ab.differing, 0u) << ab.symptom.line;
  EXPECT_EQ(ab.symptom.kind, "agree") << ab.symptom.line;
}

}  // namespace
}  // namespace ts
