#include "app/gui/color_bar.h"

#include <cmath>
#include <cstdint>
#include <string>

#include <imgui.h>

#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "app/gui/value_format.h"

namespace ts {
namespace {

ImU32 to_imgui(Rgba8 c) { return IM_COL32(c.r, c.g, c.b, c.a); }

double middle_value(const ColorScale& s) {
  if (s.split) return s.split_at;  // each half spans its side of the threshold
  const ScaleEnds e = scale_ends(s);
  if (s.log && s.symmetric) return 0.0;
  if (s.log) return std::sqrt(static_cast<double>(e.low) * e.high);
  return 0.5 * (static_cast<double>(e.low) + e.high);
}

}  // namespace

void draw_color_bar(ColormapTextures& textures, const HeatmapDisplay& display, const ValueStats& stats, float width) {
  const float bar_h = 10.0f;
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::Image(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(textures.texture(display.colormap))),
               ImVec2(width, bar_h));
  dl->AddRect(ImVec2(p.x - 1, p.y - 1), ImVec2(p.x + width + 1, p.y + bar_h + 1), theme::kFrame);

  // Labels: low at the left end, the middle, high at the right end. A split scale's middle is
  // its threshold, marked on the bar: for error / tolerance, "1 = tol".
  const ScaleEnds ends = scale_ends(display.scale);
  const std::string lo = format_short(ends.low), hi = format_short(ends.high);
  const std::string mid = format_short(middle_value(display.scale)) + (display.scale.split ? " = tol" : "");
  if (display.scale.split) {
    const float x = p.x + width / 2;
    dl->AddLine(ImVec2(x, p.y - 3), ImVec2(x, p.y + bar_h + 3), IM_COL32(255, 255, 255, 255), 2.0f);
  }
  const float y = ImGui::GetCursorScreenPos().y - 2;
  float mw = 0, hw = 0;
  {
    const ImGuiFontScope font(gui_fonts().mono);
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    dl->AddText(ImVec2(p.x, y), text, lo.c_str());
    mw = ImGui::CalcTextSize(mid.c_str()).x, hw = ImGui::CalcTextSize(hi.c_str()).x;
    dl->AddText(ImVec2(p.x + (width - mw) / 2, y), text, mid.c_str());
    dl->AddText(ImVec2(p.x + width - hw, y), text, hi.c_str());
  }
  std::string kind = display.scale.log ? (display.scale.symmetric ? "signed log" : "log |x|")
                                       : (display.scale.symmetric ? "symmetric" : "linear");
  const float kw = ImGui::CalcTextSize(kind.c_str()).x;
  // Scale kind centred between the middle and the right label, dimmed, when it fits there.
  const float mid_end = p.x + (width + mw) / 2, right_start = p.x + width - hw;
  if (right_start - mid_end > kw + 24)
    dl->AddText(ImVec2((mid_end + right_start - kw) / 2, y), theme::kDimText, kind.c_str());
  ImGui::Dummy(ImVec2(width, ImGui::GetTextLineHeight()));

  // Legend of the special colours: NaN, +Inf, -Inf and masked always (a zero count is
  // information too), the other absent kinds where the array has some; entries wrap to the
  // width of the bar.
  const float sw = ImGui::GetTextLineHeight() - 4;
  const float line_start = ImGui::GetCursorScreenPos().x;
  bool first = true;
  for (const CellClass cls : {CellClass::nan, CellClass::pos_inf, CellClass::neg_inf, CellClass::masked,
                              CellClass::never_written, CellClass::not_traced, CellClass::pending}) {
    const size_t count = stats.count(cls);
    const bool always = cls == CellClass::nan || cls == CellClass::pos_inf || cls == CellClass::neg_inf ||
                        cls == CellClass::masked;
    if (!always && count == 0) continue;
    const std::string label = std::string(cell_class_name(cls)) + " " + std::to_string(count);
    const float entry_w = sw + 5 + ImGui::CalcTextSize(label.c_str()).x;
    if (!first) {
      ImGui::SameLine(0, 14);
      if (ImGui::GetCursorScreenPos().x + entry_w > line_start + width) ImGui::NewLine();
    }
    first = false;
    const ImVec2 q = ImGui::GetCursorScreenPos();
    dl->AddRectFilled(ImVec2(q.x, q.y + 2), ImVec2(q.x + sw, q.y + 2 + sw), to_imgui(special_color(cls)));
    ImGui::Dummy(ImVec2(sw, sw));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", std::string(cell_class_meaning(cls)).c_str());
    ImGui::SameLine(0, 5);
    if (count) ImGui::TextUnformatted(label.c_str());
    else ImGui::TextDisabled("%s", label.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", std::string(cell_class_meaning(cls)).c_str());
  }
}

}  // namespace ts
