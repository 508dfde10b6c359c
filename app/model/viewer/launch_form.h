// The launch panel's fields as a person edits them, and their translation into a CaptureSpec
// (app/model/capture/capture_spec.h), checked by the capture's own check (check_capture,
// app/model/capture/capture_check.h) after the form's text is read: a bad value is a
// CaptureError naming its CaptureField, which the panel marks by its label (form_label, the
// panel's one table of labels) and shows as problem_text. Ranges are typed as text "A:B"
// (parse_index_range: half-open, either end may be left open, one number N means N:N+1, empty
// means all); seeds as text (empty = none). The stages to trace are bits over the kernel's stage
// table (kernels/kernel_stages.h). No GL.
//
//   LaunchForm form = default_launch_form();       // the built-in demo's config
//   form.config.seq_kv = 4096;
//   CaptureSpec spec = to_capture_spec(form);      // throws CaptureError
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/model/capture/capture_check.h"
#include "app/model/capture/capture_error.h"
#include "app/model/capture/capture_spec.h"
#include "app/model/run_view.h"

namespace ts {

// A field's label on the launch panel, and the section of the panel that holds it. Fields the
// panel does not show (a re-run's kv heads, window, softcap) are named as the config names them.
struct FormLabel {
  const char* section;  // "Kernel", "Inputs", "Trace", "CPU backend"
  const char* label;    // "seq_q", "capacity", "perturbation seed"
  bool operator==(const FormLabel& other) const;
};
FormLabel form_label(CaptureField field);

// A problem as the panel says it: "capacity (Trace): the trace capacity must be >= 0 events (got -1)".
std::string problem_text(const CaptureProblem& problem);

struct LaunchForm {
  AttentionConfig config;              // kernel, fault, sizes, dtype, causal, splits (0 = auto), scale (0 = 1/sqrt(D))
  Backend backend = Backend::auto_;
  bool inputs_from_files = false;
  std::string input_seed = "1";        // random inputs: seed, distribution, scale, preset
  InputDistribution distribution = InputDistribution::normal;
  double input_scale = 1.0;
  InputPreset preset = InputPreset::none;
  std::string q_file, k_file, v_file;  // files: q, k, v; or q_file alone: one .safetensors with q, k, v
  bool trace_enabled = true;
  std::string trace_batch, trace_heads, trace_queries;  // "A:B"; empty = all
  uint64_t stage_mask = ~uint64_t{0};  // bit s: stage s of kernel_stage_table(config.kernel)
  std::optional<bool> tile_events;     // Split-K: every kv tile's state; nullopt = by the run's size
  int64_t capacity = TraceRequest{}.capacity_events;
  int cpu_workers = 0;                 // 0 = all cores
  std::string perturb_seed;            // CPU: empty = off
};

// The built-in demo: Split-K whose reduce double-counts the splits' sums (fault
// double_count_l), 2 heads, 16 queries against 1024 keys in 8 splits, fp16, seed 1: a few
// seconds on the CPU backend.
LaunchForm default_launch_form();

// Throws CaptureError naming the first field that is wrong and why (ConfigError's become
// CaptureError's too, with the field they name).
CaptureSpec to_capture_spec(const LaunchForm& form);
// The first problem, or nothing: what the panel shows beside the Launch button.
std::optional<CaptureProblem> check_launch_form(const LaunchForm& form);

// The form that asks for `spec` again (the panel after a launch, or "re-run").
LaunchForm form_from_spec(const CaptureSpec& spec);
// A form for the run a trace holds, from its config and metadata (backend, seed, distribution,
// scale, preset, trace filter, whether it holds Split-K's per-tile events): what "re-run"
// starts from for a file. Inputs that came from files (the trace does not know where they are
// now) become seeded inputs, seed 0. Throws CaptureError (field kernel) for a run not
// recorded by our kernels (a user's trace has no config to launch again).
LaunchForm form_from_run(const RunView& run);

// The same request on the other backend: cpu <-> gpu (auto counts as what it resolved to,
// `ran_on`). The split count stays as it ran, so the two runs' tilings line up; a
// perturbation seed is dropped for the GPU.
CaptureSpec on_other_backend(CaptureSpec spec, Backend ran_on);

// The faults that apply to a kernel (none first), for the panel's list.
std::vector<FaultInfo> faults_for(KernelKind kernel);

// The panel's choice of kernel: the form switched to `kernel`, with what no longer fits made to
// fit: a fault that does not apply becomes none, the split count 0 off Split-K, every stage of the
// new kernel traced, and a dtype or head dim the kernel is not built for (base/kernel_list.h,
// whose lists the panel's dtype and head dim choices are) its first dtype and its nearest head dim.
void choose_kernel(LaunchForm& form, KernelKind kernel);

}  // namespace ts
