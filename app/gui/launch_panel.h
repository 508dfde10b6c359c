// The launch panel: every field of a capture (kernel, fault with its one-line doc, backend with
// the GPU's state, sizes, dtype, causal, splits, scale; inputs from a seed or Q/K/V files; trace
// filters and capacity; CPU workers and perturbation seed; where to save the trace), checked as
// it is typed (app/model/viewer/launch_form.h: the problem names its field, whose label, from
// the form's table form_label, is marked). The Launch button hands the request to the caller,
// which runs it on the worker thread; the panel never runs anything itself.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <imgui.h>

#include "app/model/viewer/background_job.h"
#include "app/model/viewer/launch_form.h"
#include "app/model/viewer/loaded_run.h"
#include "app/model/viewer/viewer_controller.h"

namespace ts {

class LaunchPanel {
 public:
  LaunchPanel() : form(default_launch_form()) {}

  // `busy`: a job is running (Launch is disabled; its progress is shown with Cancel).
  // Returns a request when Launch was clicked on a valid form; sets `cancel` when Cancel was.
  std::optional<CaptureRequest> draw(bool busy, const JobProgress::Snapshot& progress, bool& cancel, ImVec2 size);

  LaunchForm form;
  std::string save_path;  // optional: write the trace here after the capture
  // Whether a GPU can run the capture, as the caller found out off the UI thread (nullopt: not
  // known yet).
  std::optional<GpuState> gpu;

 private:
  void draw_kernel_fields(const std::optional<CaptureField>& bad);
  void draw_input_fields(const std::optional<CaptureField>& bad);
  void draw_trace_fields(const std::optional<CaptureField>& bad);
  void gpu_line();
};

}  // namespace ts
