// The launch panel's fields as a person edits them, and their translation into a CaptureSpec
// (app/model/capture/capture_spec.h) with every field checked first: a bad value is a
// LaunchFormError naming the field as the panel labels it ("seq_kv", "trace queries"), so the
// panel can point at it. Ranges are typed as text "A:B" (half-open, either end may be left open,
// one number N means N:N+1, empty means all); seeds as text (empty = none). The stages to trace
// are bits over the kernel's stage table (kernels/kernel_stages.h). No GL.
//
//   LaunchForm form = default_launch_form();       // the built-in demo's config
//   form.config.seq_kv = 4096;
//   CaptureSpec spec = to_capture_spec(form);      // throws LaunchFormError
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "app/model/capture/capture_spec.h"
#include "app/model/run_view.h"

namespace ts {

class LaunchFormError : public std::runtime_error {
 public:
  LaunchFormError(std::string field, const std::string& message)
      : std::runtime_error(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// Field names as the panel labels them (LaunchFormError::field()).
namespace launch_field {
inline constexpr const char* kernel = "kernel";
inline constexpr const char* fault = "fault";
inline constexpr const char* backend = "backend";
inline constexpr const char* batch = "batch";
inline constexpr const char* heads = "heads";
inline constexpr const char* seq_q = "seq_q";
inline constexpr const char* seq_kv = "seq_kv";
inline constexpr const char* head_dim = "head_dim";
inline constexpr const char* dtype = "dtype";
inline constexpr const char* splits = "splits";
inline constexpr const char* scale = "scale";
inline constexpr const char* input_seed = "input seed";
inline constexpr const char* input_scale = "input scale";
inline constexpr const char* input_files = "input files";
inline constexpr const char* trace_batch = "trace batch";
inline constexpr const char* trace_heads = "trace heads";
inline constexpr const char* trace_queries = "trace queries";
inline constexpr const char* trace_stages = "trace stages";
inline constexpr const char* capacity = "capacity";
inline constexpr const char* cpu_workers = "CPU workers";
inline constexpr const char* perturb_seed = "perturbation seed";
}  // namespace launch_field

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

// Throws LaunchFormError naming the first field that is wrong and why.
CaptureSpec to_capture_spec(const LaunchForm& form);
// The first problem, or nothing: what the panel shows beside the Launch button.
std::optional<LaunchFormError> check_launch_form(const LaunchForm& form);

// The form that asks for `spec` again (the panel after a launch, or "re-run").
LaunchForm form_from_spec(const CaptureSpec& spec);
// A form for the run a trace holds, from its config and metadata (backend, seed, distribution,
// scale, preset, trace filter, whether it holds Split-K's per-tile events): what "re-run"
// starts from for a file. Inputs that came from files (the trace does not know where they are
// now) become seeded inputs, seed 0. Throws LaunchFormError (field "kernel") for a run not
// recorded by our kernels (a user's trace has no config to launch again).
LaunchForm form_from_run(const RunView& run);

// The same request on the other backend: cpu <-> gpu (auto counts as what it resolved to,
// `ran_on`). The split count stays as it ran, so the two runs' tilings line up; a
// perturbation seed is dropped for the GPU.
CaptureSpec on_other_backend(CaptureSpec spec, Backend ran_on);

// The faults that apply to a kernel (none first), for the panel's list.
std::vector<FaultInfo> faults_for(KernelKind kernel);

// The trace filter's index ranges (tilescope::TraceFilter): int32, an open end is INT32_MAX.
inline constexpr int32_t kOpenRangeEnd = INT32_MAX;

// "A:B" -> [A, B); "A:" -> [A, open); ":B" -> [0, B); "N" -> [N, N + 1); "" -> [0, open).
// Throws LaunchFormError(field) for anything else, a negative or empty range, or a bound past
// the filter's int32 range.
std::pair<int32_t, int32_t> parse_index_range_text(const std::string& text, const std::string& field);
std::string index_range_text(int32_t begin, int32_t end);  // the inverse ("" for everything)

}  // namespace ts
