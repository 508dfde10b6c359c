#include "app/gui/export_dialog.h"

#include <filesystem>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/gui/error_injection.h"
#include "app/gui/imgui_scopes.h"
#include "instrumentation/trace/display_text.h"

namespace ts {

void ExportDialog::show(const std::filesystem::path& folder) {
  show_requested_ = true;
  folder_ = folder.string();
}

std::optional<ExportRequest> ExportDialog::draw(bool have_run) {
  if (show_requested_) {
    ImGui::OpenPopup("Export");
    show_requested_ = false;
  }
  std::optional<ExportRequest> out;
  ImGui::SetNextWindowSize(ImVec2(560, 0));
  const ImGuiPopupModalScope popup("Export", nullptr, ImGuiWindowFlags_NoSavedSettings);
  if (!popup) return out;
  ImGui::TextWrapped("The heatmaps on screen (the detail's trace, reference and diff, the overview's grids, or the "
                     "A/B views) with their colormaps and ranges as shown.");
  {
    const ImGuiTextWrapScope wrap(0);
    ImGui::TextDisabled("Folder: a new or empty one, or an earlier export (replaced whole); any other is refused");
  }
  ImGui::SetNextItemWidth(-1);
  ImGui::InputText("##folder", &folder_);
  // Never silently: a folder that exists is said so before anything is replaced.
  std::error_code ec;
  if (!folder_.empty() && std::filesystem::exists(folder_, ec))
    ImGui::TextColored(ImVec4(0.94f, 0.75f, 0.31f, 1), "%s exists: an earlier export there is replaced",
                       printable(std::filesystem::path(folder_).filename().string()).c_str());
  ImGui::Checkbox("PNG (colour bar, axes, title)", &choice_.png);
  ImGui::Checkbox(".npy arrays (float32; a mask beside masked grids)", &choice_.npy);
  {
    const ImGuiDisabledScope disabled(!have_run);
    ImGui::Checkbox("each event of these query rows, in the kernel's order, as numbered frames (trace, reference, diff)", &choice_.frames);
    ImGui::Checkbox("the analysis's evidence (report/: summary.json, error grids, first divergence)", &choice_.report);
    error_injection().throw_if_aimed_at("export-dialog");  // in a modal popup, disabled items pushed
  }
  ImGui::Spacing();
  const bool any = choice_.png || choice_.npy || (choice_.report && have_run);  // frames need PNG or .npy
  {
    const ImGuiDisabledScope disabled(!any || folder_.empty());
    if (ImGui::Button("Export", ImVec2(120, 0))) {
      out = choice_;
      out->folder = folder_;
      out->report = out->report && have_run;
      out->frames = out->frames && have_run;
      ImGui::CloseCurrentPopup();
    }
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(120, 0))) ImGui::CloseCurrentPopup();
  return out;
}

void SaveTraceDialog::show(const std::filesystem::path& suggestion) {
  show_requested_ = true;
  path_ = suggestion.string();
}

std::optional<std::filesystem::path> SaveTraceDialog::draw() {
  if (show_requested_) {
    ImGui::OpenPopup("Save trace as");
    show_requested_ = false;
  }
  std::optional<std::filesystem::path> out;
  ImGui::SetNextWindowSize(ImVec2(560, 0));
  const ImGuiPopupModalScope popup("Save trace as", nullptr, ImGuiWindowFlags_NoSavedSettings);
  if (!popup) return out;
  ImGui::TextWrapped("A self-contained trace (config, inputs, events, output), written to a temporary file and "
                     "renamed into place; an existing path must be a regular file other than the run's inputs.");
  ImGui::SetNextItemWidth(-1);
  const bool enter = ImGui::InputText("##path", &path_, ImGuiInputTextFlags_EnterReturnsTrue);
  {
    const ImGuiDisabledScope disabled(path_.empty());
    if (ImGui::Button("Save", ImVec2(120, 0)) || (enter && !path_.empty())) {
      out = std::filesystem::path(path_);
      ImGui::CloseCurrentPopup();
    }
    error_injection().throw_if_aimed_at("save-dialog");  // in a modal popup, disabled items pushed
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(120, 0))) ImGui::CloseCurrentPopup();
  return out;
}

}  // namespace ts
