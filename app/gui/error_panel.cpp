#include "app/gui/error_panel.h"

#include <string>

#include <imgui.h>

#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"

namespace ts {

void draw_error_panel(ErrorLog& log, float bottom_margin) {
  if (log.empty()) return;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float width = std::min(vp->WorkSize.x - 40.0f, 900.0f);
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float height = std::min(vp->WorkSize.y * 0.4f, line * (2.0f + 2.2f * static_cast<float>(log.entries().size())) + 24);
  ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + (vp->WorkSize.x - width) / 2,
                                 vp->WorkPos.y + vp->WorkSize.y - bottom_margin - height - 12));
  ImGui::SetNextWindowSize(ImVec2(width, height));
  const ImGuiStyleColorScope background(ImGuiCol_WindowBg, IM_COL32(52, 24, 26, 255));  // opaque: tests find it by colour
  const ImGuiStyleColorScope border(ImGuiCol_Border, theme::kError);
  // NoFocusOnAppearing: the panel may first appear while a modal dialog is open (an error in the
  // dialog itself), and Dear ImGui 1.86 asserts when a window that wants focus appears in the
  // frame a modal opened. The panel needs no focus to show its errors or to be dismissed.
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoCollapse |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoTitleBar |
                                 ImGuiWindowFlags_NoFocusOnAppearing;
  if (const ImGuiWindowScope window("Errors##panel", nullptr, flags); window) {
    const size_t n = log.entries().size();
    {
      const ImGuiStyleColorScope colour(ImGuiCol_Text, theme::kError);
      ImGui::Text("%zu error%s", n, n == 1 ? "" : "s");
    }
    ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - ImGui::CalcTextSize("Dismiss all").x -
                    2 * ImGui::GetStyle().FramePadding.x);
    const bool dismiss_all = ImGui::SmallButton("Dismiss all");
    ImGui::Separator();
    for (size_t i = 0; i < log.entries().size(); ++i) {
      const ErrorEntry& e = log.entries()[i];
      const ImGuiIdScope id(static_cast<int>(i));
      if (ImGui::SmallButton("x")) {
        log.dismiss(i);
        break;
      }
      ImGui::SameLine();
      ImGui::TextUnformatted(e.where.c_str());
      if (e.repeats > 1) {
        ImGui::SameLine();
        ImGui::TextDisabled("(%d times)", e.repeats);
      }
      const ImGuiIndentScope indent(ImGui::GetFrameHeight() + ImGui::GetStyle().ItemSpacing.x);
      const ImGuiTextWrapScope wrap;
      ImGui::TextUnformatted(e.message.c_str());  // made printable when it was reported
    }
    if (dismiss_all) log.clear();
  }
}

}  // namespace ts
