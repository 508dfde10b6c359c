#include "app/gui/launch_panel.h"

#include <array>
#include <cmath>
#include <cstdio>

#include <imgui_stdlib.h>

#include "app/gui/error_injection.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "app/model/capture/capture_metadata.h"
#include "base/kernel_list.h"
#include "kernels/kernel_stages.h"
#include "kernels/launcher.h"

namespace ts {
namespace {

// A label in the table's first column, red when the form's problem is `field`'s (or a field
// the panel shows at the same label: the tensors' sizes at seq_q and seq_kv).
void label(const char* text, const std::optional<CaptureField>& bad, std::optional<CaptureField> field = std::nullopt) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::AlignTextToFramePadding();
  const bool wrong = field && bad && form_label(*bad) == form_label(*field);
  if (wrong) ImGui::TextColored(ImColor(theme::kError), "%s", text);
  else ImGui::TextUnformatted(text);
  ImGui::TableNextColumn();
  ImGui::SetNextItemWidth(-1);
}

// A field's label as the form names it (form_label), red when the problem is its.
void label(CaptureField field, const std::optional<CaptureField>& bad) { label(form_label(field).label, bad, field); }

void hint(const char* text) {
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text);
}

template <class Enum, size_t N>
bool enum_combo(const char* id, Enum& value, const std::array<std::pair<Enum, const char*>, N>& items) {
  const char* current = "?";
  for (const auto& [v, name] : items)
    if (v == value) current = name;
  bool changed = false;
  if (const ImGuiComboScope combo(id, current); combo) {
    for (const auto& [v, name] : items)
      if (ImGui::Selectable(name, v == value)) value = v, changed = true;
  }
  return changed;
}

// A two-column form (label | field), ended when it goes.
class FormTable {
 public:
  explicit FormTable(const char* id) : table_(id, 2, ImGuiTableFlags_SizingStretchProp) {
    if (!table_) return;
    ImGui::TableSetupColumn("label", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("perturbation seed").x + 14);
    ImGui::TableSetupColumn("field", ImGuiTableColumnFlags_WidthStretch);
  }
  explicit operator bool() const { return static_cast<bool>(table_); }

 private:
  ImGuiTableScope table_;
};

void section(const char* title) {
  ImGui::Spacing();
  ImGui::TextColored(ImColor(theme::kAccent), "%s", title);
  ImGui::Separator();
}

}  // namespace

void LaunchPanel::gpu_line() {
  if (!gpu) {
    ImGui::TextDisabled("GPU: checking...");
    return;
  }
  if (gpu->available) {
    ImGui::TextColored(ImColor(theme::kPass), "GPU: available");
    return;
  }
  // Wrapped in the field's column: the reason (no device, a build without CUDA) is long.
  const ImGuiTextWrapScope wrap;
  const ImGuiStyleColorScope colour(ImGuiCol_Text, theme::kWarn);
  ImGui::TextWrapped("GPU: not available (%s); the cpu backend runs the same kernel source", gpu->why_not.c_str());
}

void LaunchPanel::draw_kernel_fields(const std::optional<CaptureField>& bad) {
  section("Kernel");
  const FormTable table("##kernel");
  if (!table) return;
  LaunchForm& f = form;
  label(CaptureField::kernel, bad);
  // The kernels, dtypes and head dims offered are base/kernel_list.h's (the kernels' one list).
  if (const ImGuiComboScope combo("##kernel", kernel_choice_label(f.config.kernel).c_str()); combo) {
    for (KernelKind k : built_kernels())
      if (ImGui::Selectable(kernel_choice_label(k).c_str(), k == f.config.kernel)) choose_kernel(f, k);
  }
  label(CaptureField::fault, bad);
  const FaultInfo& current = fault_info(f.config.fault);
  if (const ImGuiComboScope combo("##fault", std::string(current.name).c_str()); combo) {
    for (const FaultInfo& fi : faults_for(f.config.kernel)) {
      if (ImGui::Selectable(std::string(fi.name).c_str(), fi.fault == f.config.fault)) f.config.fault = fi.fault;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", std::string(fi.description).c_str());
    }
  }
  {
    const ImGuiTextWrapScope wrap;
    ImGui::TextDisabled("%s", std::string(current.description).c_str());
    error_injection().throw_if_aimed_at("launch");  // mid-table, text wrap pushed
  }
  label(CaptureField::backend, bad);
  enum_combo("##backend", f.backend,
             std::array{std::pair{Backend::auto_, "auto (GPU when present)"}, std::pair{Backend::cpu, "cpu (SIMT runtime)"},
                        std::pair{Backend::gpu, "gpu"}});
  gpu_line();
  label(CaptureField::batch, bad);
  ImGui::InputScalar("##batch", ImGuiDataType_S64, &f.config.batch);
  label(CaptureField::heads, bad);
  ImGui::InputScalar("##heads", ImGuiDataType_S64, &f.config.heads);
  label(CaptureField::seq_q, bad);
  ImGui::InputScalar("##seq_q", ImGuiDataType_S64, &f.config.seq_q);
  hint("Query length");
  label(CaptureField::seq_kv, bad);
  ImGui::InputScalar("##seq_kv", ImGuiDataType_S64, &f.config.seq_kv);
  hint("Key / value length");
  label(CaptureField::head_dim, bad);
  {
    const std::string cur = std::to_string(f.config.head_dim);
    if (const ImGuiComboScope combo("##head_dim", cur.c_str()); combo) {
      for (int d : built_head_dims(f.config.kernel))
        if (ImGui::Selectable(std::to_string(d).c_str(), d == f.config.head_dim)) f.config.head_dim = d;
    }
  }
  label(CaptureField::dtype, bad);
  if (const ImGuiComboScope combo("##dtype", std::string(to_string(f.config.dtype)).c_str()); combo) {
    for (DType d : built_dtypes(f.config.kernel))
      if (ImGui::Selectable(std::string(to_string(d)).c_str(), d == f.config.dtype)) f.config.dtype = d;
  }
  label("causal", bad);
  ImGui::Checkbox("##causal", &f.config.causal);
  hint("Causal mask, aligned bottom-right: query i sees keys j <= i + seq_kv - seq_q");
  label(CaptureField::splits, bad);
  {
    const ImGuiDisabledScope disabled(!splits_kv(f.config.kernel));
    ImGui::InputScalar("##splits", ImGuiDataType_S64, &f.config.num_splits);
  }
  hint("Split-K splits; 0 = the heuristic's choice");
  label(CaptureField::softmax_scale, bad);
  ImGui::InputDouble("##scale", &f.config.softmax_scale, 0, 0, "%.6g");
  hint("Softmax scale; 0 = 1/sqrt(head_dim)");
}

void LaunchPanel::draw_input_fields(const std::optional<CaptureField>& bad) {
  section("Inputs");
  LaunchForm& f = form;
  int source = f.inputs_from_files ? 1 : 0;
  if (ImGui::RadioButton("seeded random", &source, 0)) f.inputs_from_files = false;
  ImGui::SameLine();
  if (ImGui::RadioButton("Q / K / V files", &source, 1)) f.inputs_from_files = true;
  const FormTable table("##inputs");
  if (!table) return;
  if (!f.inputs_from_files) {
    label(CaptureField::input_seed, bad);
    ImGui::InputText("##seed", &f.input_seed, ImGuiInputTextFlags_CharsDecimal);
    label("distribution", bad);
    enum_combo("##dist", f.distribution,
               std::array{std::pair{InputDistribution::normal, "normal N(0, 1) x scale"},
                          std::pair{InputDistribution::uniform, "uniform U[-1, 1) x scale"}});
    label(CaptureField::input_scale, bad);
    ImGui::InputDouble("##iscale", &f.input_scale, 0, 0, "%.6g");
    label("preset", bad);
    enum_combo("##preset", f.preset,
               std::array{std::pair{InputPreset::none, "none"},
                          std::pair{InputPreset::large_logits, "large_logits (max subtraction matters)"},
                          std::pair{InputPreset::all_equal_scores, "all_equal_scores (every score ties)"}});
  } else {
    label("Q file", bad, CaptureField::input_files);
    ImGui::InputTextWithHint("##q", ".npy / .safetensors, or one .safetensors with q, k, v", &f.q_file);
    label("K file", bad, CaptureField::input_files);
    ImGui::InputTextWithHint("##k", "(empty when Q holds all three)", &f.k_file);
    label("V file", bad, CaptureField::input_files);
    ImGui::InputTextWithHint("##v", "(empty when Q holds all three)", &f.v_file);
  }
}

void LaunchPanel::draw_trace_fields(const std::optional<CaptureField>& bad) {
  section("Trace");
  LaunchForm& f = form;
  ImGui::Checkbox("record events", &f.trace_enabled);
  hint("Off: the trace holds the inputs and the output only");
  {
    const FormTable table("##trace");
    if (!table) return;
    const ImGuiDisabledScope disabled(!f.trace_enabled);
    label(CaptureField::trace_batch, bad);
    ImGui::InputTextWithHint("##tb", "all (or A:B, A:, :B, N)", &f.trace_batch);
    label(CaptureField::trace_heads, bad);
    ImGui::InputTextWithHint("##th", "all (or A:B, A:, :B, N)", &f.trace_heads);
    label(CaptureField::trace_queries, bad);
    ImGui::InputTextWithHint("##tq", "all (or A:B, A:, :B, N)", &f.trace_queries);
    hint("Query rows: events whose rows overlap these are kept");
    label(CaptureField::trace_stages, bad);
    const std::vector<StageInfo> stages = kernel_stage_table(f.config.kernel);
    for (size_t st = 0; st < stages.size(); ++st) {
      if (st > 0) ImGui::SameLine();
      bool on = (f.stage_mask >> st) & 1u;
      if (ImGui::Checkbox(stages[st].name.c_str(), &on))
        f.stage_mask = on ? f.stage_mask | (uint64_t{1} << st) : f.stage_mask & ~(uint64_t{1} << st);
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%s stage, pass %d", std::string(to_string(stages[st].kind)).c_str(),
                          static_cast<int>(stages[st].pass));
  }
  label("tile events", bad);
  {
    const ImGuiDisabledScope not_splitk(!splits_kv(f.config.kernel));
    int tiles = !f.tile_events ? 0 : *f.tile_events ? 1 : 2;
    if (ImGui::RadioButton("auto##tiles", &tiles, 0)) f.tile_events.reset();
    ImGui::SameLine();
    if (ImGui::RadioButton("on##tiles", &tiles, 1)) f.tile_events = true;
    ImGui::SameLine();
    if (ImGui::RadioButton("off##tiles", &tiles, 2)) f.tile_events = false;
  }
  hint("Split-K (splitk, splitk2): a splitk.tile / splitk2.tile event with each split's running state after every kv tile; auto: on when the "
       "trace filters keep few enough tile states");
  label(CaptureField::capacity, bad);
  ImGui::InputScalar("##cap", ImGuiDataType_S64, &f.capacity);
  hint("Events the buffer holds; the rest are counted as dropped");
  }
  section("CPU backend");
  {
    const FormTable table("##cpu");
    if (!table) return;
    label(CaptureField::cpu_workers, bad);
    ImGui::InputInt("##workers", &f.cpu_workers);
    hint("SIMT worker threads; 0 = all cores, 1 = deterministic");
    label(CaptureField::perturb_seed, bad);
    ImGui::InputTextWithHint("##perturb", "off (a number: threads resume in a seeded random order)", &f.perturb_seed,
                             ImGuiInputTextFlags_CharsDecimal);
  }
  section("Save");
  if (const FormTable table("##save"); table) {
    label("save trace as", bad);
    ImGui::InputTextWithHint("##save", "optional: run.trace.safetensors", &save_path);
  }
}

std::optional<CaptureRequest> LaunchPanel::draw(bool busy, const JobProgress::Snapshot& progress, bool& cancel,
                                               ImVec2 size) {
  std::optional<CaptureRequest> request;
  const std::optional<CaptureProblem> problem = check_launch_form(form);
  const std::optional<CaptureField> bad = problem ? std::optional(problem->field) : std::nullopt;
  const float column_w = std::min(560.0f, (size.x - 30) / 2);
  {
    const ImGuiChildScope left("##launch-left", ImVec2(column_w, size.y - ImGui::GetFrameHeightWithSpacing() * 3), false);
    draw_kernel_fields(bad);
  }
  ImGui::SameLine(0, 24);
  {
    const ImGuiChildScope right("##launch-right", ImVec2(column_w, size.y - ImGui::GetFrameHeightWithSpacing() * 3), false);
    draw_input_fields(bad);
    draw_trace_fields(bad);
  }

  ImGui::Separator();
  {
    const ImGuiDisabledScope disabled(busy || problem);
    if (ImGui::Button("Launch", ImVec2(140, 0))) {
      try {
        CaptureRequest r{to_capture_spec(form), std::nullopt};
        if (!save_path.empty()) r.save_to = std::filesystem::path(save_path);
        request = std::move(r);
      } catch (const CaptureError&) {
        // check_launch_form said it was fine a moment ago; nothing to run.
      }
    }
  }
  ImGui::SameLine();
  if (ImGui::Button("Reset to the demo")) form = default_launch_form();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Split-K, fault double_count_l, 2 heads, 16 x 1024, fp16, 8 splits");
  ImGui::SameLine(0, 18);
  if (busy) {
    const auto fraction = progress.fraction();
    const float t = static_cast<float>(ImGui::GetTime());
    char overlay[160];
    std::snprintf(overlay, sizeof overlay, "%s%s", progress.phase.c_str(),
                  fraction ? (" " + std::to_string(static_cast<int>(*fraction * 100)) + "%").c_str() : "");
    ImGui::ProgressBar(fraction ? static_cast<float>(*fraction) : std::fmod(t, 1.0f), ImVec2(320, 0), overlay);
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) cancel = true;
  } else if (problem) {
    ImGui::AlignTextToFramePadding();
    ImGui::TextColored(ImColor(theme::kError), "%s", problem_text(*problem).c_str());
  } else {
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("Ready: the capture runs on a worker thread; the viewer stays responsive.");
  }
  return request;
}

}  // namespace ts
