#include "app/gui/run_header.h"

#include <string>

#include <imgui.h>

#include "app/gui/error_injection.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "app/model/analysis/report_text.h"
#include "app/model/analysis/tolerance.h"
#include "app/model/analysis/worst_cell.h"
#include "instrumentation/trace/display_text.h"
#include "instrumentation/trace/trace_file.h"

namespace ts {

void draw_run_header(const ViewerSession& s, float width) {
  if (!s.has_run()) return;
  const AnalysisReport& r = s.report();
  const RunView& run = s.view();
  {
    const ImGuiFontScope font(gui_fonts().large);
    const bool clean = r.clean();
    const char* badge = clean ? " CLEAN " : " DIVERGENCE ";
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const ImVec2 bs = ImGui::CalcTextSize(badge);
    ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + bs.x, p.y + bs.y), clean ? theme::kPass : theme::kFail, 3.0f);
    ImGui::GetWindowDrawList()->AddText(p, IM_COL32(16, 16, 18, 255), badge);
    ImGui::Dummy(bs);
    if (ImGui::IsItemHovered()) {
      // The verdict's rule and its numbers (tolerance.h), and how far the worst cell is from it.
      const ImGuiFontScope ui(gui_fonts().ui);
      const ImGuiTooltipScope tooltip;
      const ImGuiTextWrapScope tip_wrap(ImGui::GetFontSize() * 40);
      ImGui::TextUnformatted(std::string(comparison_rule()).c_str());
      ImGui::Spacing();
      ImGui::TextDisabled("tolerance: %s", r.tolerance.describe().c_str());
      if (r.worst_cell) {
        ImGui::Spacing();
        ImGui::Text("worst cell: %s", describe_worst_cell(*r.worst_cell, r).c_str());
      }
    }
    ImGui::SameLine(0, 12);
    const ImGuiTextWrapScope wrap(ImGui::GetCursorPosX() + width - bs.x - 24);
    ImGui::TextUnformatted(r.symptom.line.c_str());
    error_injection().throw_if_aimed_at("header");  // large font and text wrap pushed
  }
  if (ImGui::IsItemHovered() && !r.symptom.details.empty()) {
    const ImGuiTooltipScope tooltip;
    ImGui::TextDisabled("evidence (%s)", r.symptom.kind.c_str());
    for (const std::string& d : r.symptom.details) ImGui::BulletText("%s", d.c_str());
  }

  std::string info = s.run().display_name() + "   " + run_line(r);
  const auto device = run.metadata.find(std::string(trace_meta::device));
  info += "   " + s.run().backend_text() +
          (device != run.metadata.end() ? " (" + device->second + ")" : std::string());
  info += "   " + std::to_string(run.num_events()) + " events";
  ImGui::TextDisabled("%s", printable(info).c_str());  // the file's name and its device string
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("tolerance: %s", r.tolerance.describe().c_str());
  if (run.dropped_events > 0 || !r.missing.empty()) {
    ImGui::SameLine(0, 12);
    ImGui::TextColored(ImColor(theme::kWarn), "%llu dropped (trace buffer full), %zu missing",
                       static_cast<unsigned long long>(run.dropped_events), r.missing.size());
  }
  if (s.has_b()) {
    ImGui::SameLine(0, 12);
    const ABReport& ab = s.ab_report();
    ImGui::TextColored(ImColor(ab.verdict == Verdict::not_compared ? theme::kWarn : theme::kAccent), "A/B with %s: %s",
                       printable(s.b().display_name()).c_str(), ab_verdict_text(ab).c_str());
    if (ImGui::IsItemHovered() && !ab.inputs_identical) ImGui::SetTooltip("%s", printable(ab.inputs_note).c_str());
  }
}

}  // namespace ts
