// The launch panel's form: a form becomes the CaptureSpec it describes, and every bad field is
// refused with an error naming that field, which the panel says by its label, before anything
// runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>

#include "app/model/capture/capture_metadata.h"
#include "app/model/viewer/launch_form.h"
#include "base/kernel_list.h"
#include "kernels/kernel_stages.h"
#include "tests/model/viewer/viewer_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

constexpr int32_t kOpen = kOpenRangeEnd;  // the filter's open end

// The bit of a kernel's stage named `name`.
uint64_t stage_bit(KernelKind kernel, const std::string& name) {
  return stage_mask_from_names(name, kernel_stage_table(kernel));
}

// The field a bad form is refused for (nullopt when it is accepted).
std::optional<CaptureField> refused_field(const LaunchForm& f) {
  try {
    (void)to_capture_spec(f);
  } catch (const CaptureError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    EXPECT_TRUE(e.field().has_value()) << e.what();
    return e.field();
  }
  return std::nullopt;
}

TEST(LaunchForm, TheDefaultIsTheBuiltInDemo) {
  const LaunchForm f = default_launch_form();
  const CaptureSpec s = to_capture_spec(f);
  EXPECT_EQ(s.config.kernel, KernelKind::splitk);
  EXPECT_EQ(s.config.fault, Fault::double_count_l);
  EXPECT_EQ(s.config.num_splits, 8);
  EXPECT_TRUE(s.trace.enabled);
  EXPECT_EQ(std::get<RandomInputSpec>(s.inputs).seed, 1u);
  EXPECT_FALSE(check_launch_form(f).has_value());
}

TEST(LaunchForm, RandomValidFormsBecomeTheirSpecAndBack) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    LaunchForm f;
    f.config.kernel = rng() % 2 ? KernelKind::fa1 : KernelKind::splitk;
    const std::vector<FaultInfo> faults = faults_for(f.config.kernel);
    f.config.fault = faults[rng() % faults.size()].fault;
    f.config.batch = 1 + static_cast<int64_t>(rng() % 4);
    f.config.heads = 1 + static_cast<int64_t>(rng() % 4);
    f.config.seq_q = 1 + static_cast<int64_t>(rng() % 300);
    f.config.seq_kv = 1 + static_cast<int64_t>(rng() % 3000);
    const std::vector<int> head_dims = built_head_dims(f.config.kernel);
    f.config.head_dim = head_dims[rng() % head_dims.size()];
    const std::vector<DType> dtypes = built_dtypes(f.config.kernel);
    f.config.dtype = dtypes[rng() % dtypes.size()];
    f.config.causal = rng() % 2;
    f.config.num_splits = splits_kv(f.config.kernel) ? static_cast<int64_t>(rng() % 9) : 0;
    f.config.softmax_scale = rng() % 2 ? 0.0 : 0.01 + static_cast<double>(rng() % 100) / 100.0;
    f.backend = static_cast<Backend>(rng() % 3);
    f.input_seed = std::to_string(rng());
    f.distribution = rng() % 2 ? InputDistribution::normal : InputDistribution::uniform;
    f.input_scale = 0.25 * static_cast<double>(1 + rng() % 8);
    f.preset = static_cast<InputPreset>(rng() % 3);
    f.trace_enabled = rng() % 4 != 0;
    const int64_t b0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(f.config.batch));
    f.trace_batch = rng() % 2 ? "" : std::to_string(b0) + ":" + std::to_string(b0 + 1 + static_cast<int64_t>(rng() % 3));
    const int64_t h0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(f.config.heads));
    f.trace_heads = rng() % 2 ? "" : std::to_string(h0) + ":";
    const int64_t q0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(f.config.seq_q));
    f.trace_queries = rng() % 2 ? "" : std::to_string(q0) + ":" + std::to_string(q0 + 1 + static_cast<int64_t>(rng() % 40));
    f.stage_mask = rng() % 2 ? ~uint64_t{0} : stage_bit(f.config.kernel, "final");
    f.tile_events = rng() % 3 == 0 ? std::nullopt : std::optional<bool>(rng() % 2 == 0);
    f.capacity = static_cast<int64_t>(rng() % 100000);
    f.cpu_workers = static_cast<int>(rng() % 5);
    f.perturb_seed = (f.backend != Backend::gpu && rng() % 2) ? std::to_string(rng() % 1000) : "";

    SCOPED_TRACE("trial " + std::to_string(trial));
    const CaptureSpec s = to_capture_spec(f);
    EXPECT_EQ(s.config, f.config);
    EXPECT_EQ(s.backend, f.backend);
    const auto& r = std::get<RandomInputSpec>(s.inputs);
    EXPECT_EQ(std::to_string(r.seed), f.input_seed);
    EXPECT_EQ(r.distribution, f.distribution);
    EXPECT_EQ(r.scale, f.input_scale);
    EXPECT_EQ(r.preset, f.preset);
    EXPECT_EQ(s.trace.enabled, f.trace_enabled);
    EXPECT_EQ(s.trace.filter.batch_begin, f.trace_batch.empty() ? 0 : b0);
    EXPECT_EQ(s.trace.filter.head_begin, f.trace_heads.empty() ? 0 : h0);
    EXPECT_EQ(s.trace.filter.head_end, kOpen);
    EXPECT_EQ(s.trace.filter.query_begin, f.trace_queries.empty() ? 0 : q0);
    EXPECT_EQ(s.trace.filter.query_end == kOpen, f.trace_queries.empty());
    const std::vector<StageInfo> stages = kernel_stage_table(f.config.kernel);
    EXPECT_EQ(s.trace.filter.stage_mask, f.stage_mask & all_stages_mask(stages)) << "bits of the kernel's stages";
    EXPECT_NE(s.trace.filter.stage_mask, 0u);
    // Per-tile events are Split-K's; FA-1 has none to ask for.
    EXPECT_EQ(s.tile_events, splits_kv(f.config.kernel) ? f.tile_events : std::nullopt);
    EXPECT_EQ(s.trace.capacity_events, f.capacity);
    EXPECT_EQ(s.cpu_workers, f.cpu_workers);
    EXPECT_EQ(s.perturb_seed.has_value(), !f.perturb_seed.empty());

    // The panel re-filled from the spec asks for the same thing.
    const CaptureSpec again = to_capture_spec(form_from_spec(s));
    EXPECT_EQ(again.config, s.config);
    EXPECT_EQ(again.trace.filter.batch_begin, s.trace.filter.batch_begin);
    EXPECT_EQ(again.trace.filter.batch_end, s.trace.filter.batch_end);
    EXPECT_EQ(again.trace.filter.head_begin, s.trace.filter.head_begin);
    EXPECT_EQ(again.trace.filter.query_begin, s.trace.filter.query_begin);
    EXPECT_EQ(again.trace.filter.query_end, s.trace.filter.query_end);
    EXPECT_EQ(again.trace.filter.stage_mask, s.trace.filter.stage_mask);
    EXPECT_EQ(again.tile_events, s.tile_events);
    EXPECT_EQ(again.perturb_seed, s.perturb_seed);
    EXPECT_EQ(std::get<RandomInputSpec>(again.inputs).seed, r.seed);
  }
}

TEST(LaunchForm, EachBadFieldIsNamed) {
  const LaunchForm good = default_launch_form();
  auto with = [&](auto change) {
    LaunchForm f = good;
    change(f);
    return refused_field(f);
  };
  EXPECT_EQ(with([](LaunchForm& f) { f.config.batch = 0; }), CaptureField::batch);
  EXPECT_EQ(with([](LaunchForm& f) { f.config.heads = -3; }), CaptureField::heads);
  EXPECT_EQ(with([](LaunchForm& f) { f.config.seq_q = 0; }), CaptureField::seq_q);
  EXPECT_EQ(with([](LaunchForm& f) { f.config.seq_kv = 0; }), CaptureField::seq_kv);
  EXPECT_EQ(with([](LaunchForm& f) { f.config.head_dim = 48; }), CaptureField::head_dim);
  EXPECT_EQ(with([](LaunchForm& f) { f.config.num_splits = -1; }), CaptureField::splits);
  EXPECT_EQ(with([](LaunchForm& f) { f.config.softmax_scale = std::nan(""); }), CaptureField::softmax_scale);
  EXPECT_EQ(with([](LaunchForm& f) { f.config.softmax_scale = -1; }), CaptureField::softmax_scale);
  EXPECT_EQ(with([](LaunchForm& f) { f.config.fault = Fault::per_tile_softmax; }), CaptureField::fault) << "an FA-1 fault on Split-K";
  EXPECT_EQ(with([](LaunchForm& f) { f.config.seq_q = 1 << 20, f.config.heads = 4096; }), CaptureField::q_size) << "q would overflow";
  EXPECT_EQ(with([](LaunchForm& f) { f.input_seed = "12a"; }), CaptureField::input_seed);
  EXPECT_EQ(with([](LaunchForm& f) { f.input_seed = ""; }), CaptureField::input_seed);
  EXPECT_EQ(with([](LaunchForm& f) { f.input_seed = "-1"; }), CaptureField::input_seed);
  EXPECT_EQ(with([](LaunchForm& f) { f.input_scale = 0; }), CaptureField::input_scale);
  EXPECT_EQ(with([](LaunchForm& f) { f.input_scale = std::numeric_limits<double>::infinity(); }), CaptureField::input_scale);
  EXPECT_EQ(with([](LaunchForm& f) { f.trace_batch = "3:1"; }), CaptureField::trace_batch);
  EXPECT_EQ(with([](LaunchForm& f) { f.trace_batch = "1:"; }), CaptureField::trace_batch) << "keeps nothing of batch 1";
  EXPECT_EQ(with([](LaunchForm& f) { f.trace_heads = "x"; }), CaptureField::trace_heads);
  EXPECT_EQ(with([](LaunchForm& f) { f.trace_queries = "16:20"; }), CaptureField::trace_queries) << "16 queries: 0-15";
  EXPECT_EQ(with([](LaunchForm& f) { f.trace_queries = "15"; }), std::nullopt) << "the last query";
  EXPECT_EQ(with([](LaunchForm& f) { f.trace_queries = "3:2"; }), CaptureField::trace_queries);
  EXPECT_EQ(with([](LaunchForm& f) { f.trace_queries = "0:3000000000"; }), CaptureField::trace_queries) << "past int32";
  EXPECT_EQ(with([](LaunchForm& f) { f.stage_mask = 0; }), CaptureField::trace_stages);
  EXPECT_EQ(with([](LaunchForm& f) { f.stage_mask = uint64_t{1} << 40; }), CaptureField::trace_stages)
      << "no stage of the Split-K kernel's four";
  EXPECT_EQ(with([](LaunchForm& f) { f.capacity = -1; }), CaptureField::capacity);
  EXPECT_EQ(with([](LaunchForm& f) { f.cpu_workers = -2; }), CaptureField::cpu_workers);
  EXPECT_EQ(with([](LaunchForm& f) { f.perturb_seed = "seven"; }), CaptureField::perturb_seed);
  EXPECT_EQ(with([](LaunchForm& f) { f.perturb_seed = "7", f.backend = Backend::gpu; }), CaptureField::perturb_seed);
  EXPECT_EQ(with([](LaunchForm& f) { f.inputs_from_files = true; }), CaptureField::input_files);
  EXPECT_EQ(with([](LaunchForm& f) { f.inputs_from_files = true, f.q_file = "/nonexistent/q.npy"; }), CaptureField::input_files);
  // Stage filters off with tracing off are fine: nothing is traced anyway.
  EXPECT_EQ(with([](LaunchForm& f) { f.trace_enabled = false, f.stage_mask = 0; }), std::nullopt);
  const auto problem = check_launch_form([&] {
    LaunchForm f = good;
    f.config.head_dim = 100;
    return f;
  }());
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->field, CaptureField::head_dim);
  EXPECT_NE(problem->message.find("100"), std::string::npos) << problem->message;
}

// The panel says a problem with its own label for the field (never a command-line option),
// and marks the label it shows; every field has one.
TEST(LaunchForm, AProblemIsShownWithThePanelsLabel) {
  LaunchForm f = default_launch_form();
  f.capacity = -1;
  const std::optional<CaptureProblem> capacity = check_launch_form(f);
  ASSERT_TRUE(capacity.has_value());
  EXPECT_EQ(capacity->field, CaptureField::capacity);
  EXPECT_EQ(problem_text(*capacity), "capacity (Trace): " + capacity->message);
  EXPECT_NE(capacity->message.find("-1"), std::string::npos) << capacity->message;
  EXPECT_EQ(problem_text(*capacity).find("--"), std::string::npos) << problem_text(*capacity);

  f = default_launch_form();
  f.trace_heads = "x";
  const std::optional<CaptureProblem> heads = check_launch_form(f);
  ASSERT_TRUE(heads.has_value());
  EXPECT_EQ(problem_text(*heads).rfind("heads (Trace): 'x' is not an index range", 0), 0u) << problem_text(*heads);
  f = default_launch_form();
  f.config.heads = 0;
  EXPECT_EQ(problem_text(*check_launch_form(f)).rfind("heads (Kernel): heads must be at least 1", 0), 0u);
  f = default_launch_form();
  f.perturb_seed = "3";
  f.backend = Backend::gpu;
  EXPECT_EQ(problem_text(*check_launch_form(f)).rfind("perturbation seed (CPU backend): ", 0), 0u);

  // One label per field; the tensors' sizes are marked at their sequence lengths.
  for (size_t i = 0; i < kCaptureFields.size(); ++i) {
    const FormLabel a = form_label(kCaptureFields[i]);
    EXPECT_GT(std::string(a.section).size(), 0u);
    EXPECT_GT(std::string(a.label).size(), 0u);
    EXPECT_EQ(std::string(a.label).find("--"), std::string::npos) << a.label;
    for (size_t j = 0; j < i; ++j) {
      const bool shared = kCaptureFields[i] == CaptureField::q_size || kCaptureFields[i] == CaptureField::kv_size;
      if (!shared) {
        EXPECT_FALSE(a == form_label(kCaptureFields[j])) << a.section << " " << a.label;
      }
    }
  }
  EXPECT_TRUE(form_label(CaptureField::q_size) == form_label(CaptureField::seq_q));
  EXPECT_TRUE(form_label(CaptureField::kv_size) == form_label(CaptureField::seq_kv));
}

TEST(LaunchForm, InputFilesBecomeTheSpecsFileList) {
  test::TempDir dir;
  for (const char* n : {"q.npy", "k.npy", "v.npy", "qkv.safetensors"}) std::ofstream(dir.path() / n) << "x";
  LaunchForm f = default_launch_form();
  f.inputs_from_files = true;
  f.q_file = (dir.path() / "q.npy").string();
  f.k_file = (dir.path() / "k.npy").string();
  EXPECT_EQ(refused_field(f), CaptureField::input_files) << "K without V";
  f.v_file = (dir.path() / "v.npy").string();
  const CaptureSpec s = to_capture_spec(f);
  const auto& files = std::get<InputFiles>(s.inputs).paths;
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[2], dir.path() / "v.npy");
  f.q_file = (dir.path() / "qkv.safetensors").string();
  f.k_file.clear();
  f.v_file.clear();
  EXPECT_EQ(std::get<InputFiles>(to_capture_spec(f).inputs).paths.size(), 1u);
  const LaunchForm back = form_from_spec(to_capture_spec(f));
  EXPECT_TRUE(back.inputs_from_files);
  EXPECT_EQ(back.q_file, f.q_file);
}

TEST(LaunchForm, OtherBackendAndFaultLists) {
  CaptureSpec s = to_capture_spec(default_launch_form());
  s.backend = Backend::cpu;
  s.perturb_seed = 5;
  const CaptureSpec g = on_other_backend(s, Backend::cpu);
  EXPECT_EQ(g.backend, Backend::gpu);
  EXPECT_FALSE(g.perturb_seed.has_value()) << "perturbation is CPU-only";
  EXPECT_EQ(g.config, s.config);
  EXPECT_EQ(on_other_backend(g, Backend::gpu).backend, Backend::cpu);
  s.backend = Backend::auto_;
  EXPECT_EQ(on_other_backend(s, Backend::cpu).backend, Backend::gpu) << "auto ran on the cpu";
  EXPECT_EQ(on_other_backend(s, Backend::gpu).backend, Backend::cpu);

  for (KernelKind k : {KernelKind::fa1, KernelKind::splitk}) {
    const std::vector<FaultInfo> faults = faults_for(k);
    ASSERT_FALSE(faults.empty());
    EXPECT_EQ(faults.front().fault, Fault::none);
    for (const FaultInfo& f : faults) {
      EXPECT_FALSE(f.description.empty()) << f.name;
      AttentionConfig c = to_capture_spec(default_launch_form()).config;
      c.kernel = k;
      c.num_splits = 0;
      c.fault = f.fault;
      EXPECT_NO_THROW(validate(c)) << f.name << " is listed for " << to_string(k);
    }
    size_t applicable = 0;
    for (const FaultInfo& f : all_faults()) applicable += f.fault == Fault::none || (k == KernelKind::fa1 ? f.fa1 : f.splitk);
    EXPECT_EQ(faults.size(), applicable);
  }
}

// The panel's kernel choice (choose_kernel) from every listed build to every kernel: the form
// stays one the kernels are built for (its dtype and head dim among the panel's choices, which
// are base/kernel_list.h's), keeps what the new kernel is built for, and never fails validation on
// the kernel's account.
TEST(LaunchForm, ChoosingAKernelKeepsTheFormOnItsBuilds) {
  for (const KernelBuild& from : kernel_builds())
    for (KernelKind to : built_kernels()) {
      LaunchForm f = default_launch_form();
      choose_kernel(f, from.kernel);
      f.config.dtype = from.dtype;
      f.config.head_dim = from.head_dim;
      f.config.fault = faults_for(from.kernel).back().fault;
      ASSERT_FALSE(refused_field(f).has_value()) << to_string(from.kernel);
      choose_kernel(f, to);
      SCOPED_TRACE(std::string(to_string(from.kernel)) + " " + std::string(to_string(from.dtype)) + " " +
                   std::to_string(from.head_dim) + " -> " + std::string(to_string(to)));
      EXPECT_EQ(f.config.kernel, to);
      EXPECT_TRUE(is_built(to, f.config.dtype, f.config.head_dim));
      const std::vector<DType> dtypes = built_dtypes(to);
      const std::vector<int> dims = built_head_dims(to);
      if (std::find(dtypes.begin(), dtypes.end(), from.dtype) != dtypes.end()) {
        EXPECT_EQ(f.config.dtype, from.dtype);
      }
      if (std::find(dims.begin(), dims.end(), from.head_dim) != dims.end()) {
        EXPECT_EQ(f.config.head_dim, from.head_dim);
      }
      // The nearest head dim the kernel is built for.
      for (int d : dims) EXPECT_LE(std::abs(f.config.head_dim - from.head_dim), std::abs(d - from.head_dim)) << d;
      EXPECT_FALSE(refused_field(f).has_value());
      EXPECT_EQ(f.stage_mask, all_stages_mask(kernel_stage_table(to)));
    }
}

TEST(LaunchForm, FromARunOfOurKernelsAndNotFromAUsersTrace) {
  TS_SEEDED(seed);
  CaptureSpec spec = test::cpu_spec(test::splitk_small(Fault::double_count_l), seed);
  spec.trace.filter.query_begin = 8;
  spec.trace.filter.stage_mask = stage_bit(KernelKind::splitk, "splitk.tile,splitk.reduce");
  spec.tile_events = true;
  const LoadedRun run = test::capture_cpu(spec);
  const LaunchForm f = form_from_run(*run.run);
  EXPECT_EQ(f.config, *run.run->config);
  EXPECT_EQ(f.input_seed, std::to_string(seed));
  EXPECT_EQ(f.trace_queries, "8:");
  EXPECT_EQ(f.trace_heads, "");
  EXPECT_EQ(f.stage_mask, spec.trace.filter.stage_mask) << "stages by name, over the kernel's table";
  EXPECT_EQ(f.tile_events, std::optional<bool>(true)) << "the run holds splitk.tile events";
  const CaptureSpec again = to_capture_spec(f);
  EXPECT_EQ(again.trace.filter.query_begin, 8);
  EXPECT_EQ(again.trace.filter.stage_mask, spec.trace.filter.stage_mask);

  spec.tile_events = false;
  EXPECT_EQ(form_from_run(*test::capture_cpu(spec).run).tile_events, std::optional<bool>(false));

  test::TempDir dir;
  const test::UserStageTrace user = test::write_user_stage_trace(dir.path() / "user.trace.safetensors", seed);
  JobProgress progress;
  const LoadedRun theirs = load_run_file(user.path, progress);
  try {
    form_from_run(*theirs.run);
    ADD_FAILURE() << "a user's trace became a launch form";
  } catch (const CaptureError& e) {
    EXPECT_EQ(e.field(), CaptureField::kernel);
    EXPECT_NE(std::string(e.what()).find("user.trace.safetensors"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ts
