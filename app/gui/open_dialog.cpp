#include "app/gui/open_dialog.h"

#include <algorithm>
#include <cstdio>
#include <system_error>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/gui/error_injection.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "instrumentation/trace/display_text.h"

namespace ts {
namespace {

bool is_trace_name(const std::string& name) {
  const std::string ext = ".safetensors";
  return name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
}

std::string size_text(uintmax_t bytes) {
  char buf[32];
  if (bytes >= (uintmax_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  else if (bytes >= (uintmax_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  return buf;
}

}  // namespace

void OpenDialog::show(OpenTarget target, const std::filesystem::path& folder) {
  show_requested_ = true;
  target_ = target;
  list(folder.empty() ? std::filesystem::current_path() : folder);
  path_text_ = folder_.string() + "/";
}

void OpenDialog::list(const std::filesystem::path& folder) {
  std::error_code ec;
  folder_ = std::filesystem::absolute(folder, ec).lexically_normal();
  entries_.clear();
  list_error_.clear();
  std::filesystem::directory_iterator it(folder_, std::filesystem::directory_options::skip_permission_denied, ec);
  if (ec) {
    list_error_ = "cannot list " + folder_.string() + ": " + ec.message();
    return;
  }
  for (const auto& e : it) {
    std::error_code e2;
    Entry entry;
    entry.name = e.path().filename().string();
    if (entry.name.empty() || entry.name[0] == '.') continue;
    entry.folder = e.is_directory(e2);
    if (!entry.folder) {
      if (!all_files_ && !is_trace_name(entry.name)) continue;
      entry.size = e.file_size(e2);
    }
    entries_.push_back(entry);
  }
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return a.folder != b.folder ? a.folder : a.name < b.name;
  });
}

std::optional<OpenChoice> OpenDialog::draw(const RecentFiles& recent) {
  const char* title = target_ == OpenTarget::a ? "Open trace" : "Compare with...";
  if (show_requested_) {
    ImGui::OpenPopup(title);
    show_requested_ = false;
  }
  std::optional<OpenChoice> chosen;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowSize(ImVec2(std::min(900.0f, vp->WorkSize.x - 80), std::min(560.0f, vp->WorkSize.y - 80)),
                           ImGuiCond_Appearing);
  const ImGuiPopupModalScope popup(title, nullptr, ImGuiWindowFlags_NoSavedSettings);
  if (!popup) return chosen;
  ImGui::TextDisabled(target_ == OpenTarget::a ? "A trace file (*.trace.safetensors) to open and analyse."
                                               : "A second run of the same problem, compared with the open one (A/B).");
  ImGui::SetNextItemWidth(-ImGui::CalcTextSize("Open").x - 40);
  const bool enter = ImGui::InputText("##path", &path_text_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  const bool open_clicked = ImGui::Button("Open");
  if (enter || open_clicked) {
    std::error_code ec;
    const std::filesystem::path p(path_text_);
    if (std::filesystem::is_directory(p, ec)) {
      list(p);
      path_text_ = folder_.string() + "/";
    } else {
      chosen = OpenChoice{target_, p};
    }
  }
  const float list_h = ImGui::GetContentRegionAvail().y - ImGui::GetFrameHeightWithSpacing() - 4;
  const float recent_w = 300;
  {
    const ImGuiChildScope files("##files", ImVec2(ImGui::GetContentRegionAvail().x - recent_w - 8, list_h), true);
    ImGui::TextDisabled("%s", printable(folder_.string()).c_str());
    error_injection().throw_if_aimed_at("open-dialog");  // in a child of a modal popup
    if (ImGui::Selectable("..", false, ImGuiSelectableFlags_AllowDoubleClick) && ImGui::IsMouseDoubleClicked(0)) {
      list(folder_.parent_path());
      path_text_ = folder_.string() + "/";
    }
    if (!list_error_.empty()) ImGui::TextColored(ImColor(theme::kError), "%s", printable(list_error_).c_str());
    std::optional<std::filesystem::path> enter_folder;
    for (const Entry& e : entries_) {
      const std::string label = printable(e.folder ? e.name + "/" : e.name);  // names shown, the real one opened
      const std::filesystem::path full = folder_ / e.name;
      if (ImGui::Selectable(label.c_str(), path_text_ == full.string(), ImGuiSelectableFlags_AllowDoubleClick)) {
        path_text_ = full.string();
        if (ImGui::IsMouseDoubleClicked(0)) {
          if (e.folder) enter_folder = full;
          else chosen = OpenChoice{target_, full};
        }
      }
      if (!e.folder) {
        ImGui::SameLine(ImGui::GetContentRegionAvail().x - 60);
        ImGui::TextDisabled("%s", size_text(e.size).c_str());
      }
    }
    if (enter_folder) {
      list(*enter_folder);
      path_text_ = folder_.string() + "/";
    }
  }
  ImGui::SameLine();
  {
    const ImGuiChildScope recent_list("##recent", ImVec2(recent_w, list_h), true);
    ImGui::TextDisabled("Recent");
    if (recent.entries().empty()) ImGui::TextDisabled("(none yet)");
    for (size_t i = 0; i < recent.entries().size(); ++i) {
      const std::filesystem::path& p = recent.entries()[i];
      const ImGuiIdScope id(static_cast<int>(i));  // names repeat across folders
      if (ImGui::Selectable(printable(p.filename().string()).c_str(), false, ImGuiSelectableFlags_AllowDoubleClick)) {
        path_text_ = p.string();
        if (ImGui::IsMouseDoubleClicked(0)) chosen = OpenChoice{target_, p};
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", printable(p.string()).c_str());
    }
  }
  if (ImGui::Checkbox("Show all files", &all_files_)) list(folder_);
  ImGui::SameLine(ImGui::GetContentRegionAvail().x - 100);
  if (ImGui::Button("Cancel", ImVec2(100, 0))) ImGui::CloseCurrentPopup();
  if (chosen) ImGui::CloseCurrentPopup();
  return chosen;
}

}  // namespace ts
