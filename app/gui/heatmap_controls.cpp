#include "app/gui/heatmap_controls.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <imgui.h>

#include "app/gui/imgui_scopes.h"

namespace ts {

bool draw_heatmap_controls(const char* id, HeatmapDisplay& d, std::span<const FloatGridView> data, float width) {
  const ImGuiIdScope scope(id);
  bool changed = false, refit = false;
  const float gap = ImGui::GetStyle().ItemSpacing.x;

  // Line 1: colormap, symmetric, log (+ floor).
  ImGui::SetNextItemWidth(std::min(120.0f, width * 0.3f));
  if (const ImGuiComboScope combo("##colormap", std::string(colormap_name(d.colormap)).c_str()); combo) {
    for (ColormapId m : all_colormaps()) {
      const bool selected = m == d.colormap;
      if (ImGui::Selectable(std::string(colormap_name(m)).c_str(), selected)) {
        d.colormap = m;
        changed = true;
      }
      if (selected) ImGui::SetItemDefaultFocus();
    }
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Colormap");
  ImGui::SameLine();
  if (ImGui::Checkbox("Symmetric", &d.scale.symmetric)) {
    changed = true, refit = d.auto_range;
    if (d.scale.symmetric) d.scale.split = false;  // a symmetric scale has 0, not a threshold, in its middle
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Range +-max|x| around 0 (for differences)");
  ImGui::SameLine();
  if (ImGui::Checkbox("Log", &d.scale.log)) changed = true, refit = d.auto_range;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Log of |x| (signed log when symmetric)");
  if (d.scale.log) {
    ImGui::SameLine();
    const float room = ImGui::GetContentRegionAvail().x;
    ImGui::SetNextItemWidth(std::max(60.0f, room));
    // "floor 1.0e-03" where it fits; a narrow column shows the number alone (the tooltip names it).
    const bool wide = room >= ImGui::CalcTextSize("floor 1.0e-03").x + 2 * ImGui::GetStyle().FramePadding.x;
    float floor = d.scale.log_floor;
    if (ImGui::InputFloat("##floor", &floor, 0, 0, wide ? "floor %.1e" : "%.0e", ImGuiInputTextFlags_EnterReturnsTrue) &&
        std::isfinite(floor) && floor > 0) {
      d.scale.log_floor = floor;
      changed = true;
      refit = d.auto_range;
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Log floor: the smallest |x| the log scale resolves");
  }

  // Line 2: black point, white point, auto, fit (error / tolerance: the tolerance scale).
  const char* fit_label = d.error_ratio ? "Tolerance" : "Autofit";
  const float button_w = ImGui::CalcTextSize(fit_label).x + 2 * ImGui::GetStyle().FramePadding.x;
  const float auto_w = ImGui::GetFrameHeight() + ImGui::CalcTextSize("Auto").x + ImGui::GetStyle().ItemInnerSpacing.x;
  const float field_w = std::max(60.0f, (width - button_w - auto_w - 3 * gap) / 2);
  float lo = d.scale.min, hi = d.scale.max;
  ImGui::SetNextItemWidth(field_w);
  const bool lo_edit = ImGui::DragFloat("##min", &lo, std::max(1e-6f, (hi - lo) / 500.0f), 0, 0, "%.5g");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Black point (value at the low end)");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(field_w);
  const bool hi_edit = ImGui::DragFloat("##max", &hi, std::max(1e-6f, (hi - lo) / 500.0f), 0, 0, "%.5g");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("White point (value at the high end)");
  if ((lo_edit || hi_edit) && std::isfinite(lo) && std::isfinite(hi)) {
    // Keep the scale valid while dragging: the points may meet but not cross.
    if (lo_edit) lo = std::min(lo, hi);
    if (hi_edit) hi = std::max(hi, lo);
    d.scale.min = lo;
    d.scale.max = hi;
    d.auto_range = false;
    changed = true;
  }
  ImGui::SameLine();
  if (ImGui::Checkbox("Auto", &d.auto_range) && d.auto_range) changed = refit = true;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Fit the range to the data whenever it changes");
  ImGui::SameLine();
  if (d.error_ratio) {
    // Error maps default to one fixed scale (colour means the same in every run); this puts it back.
    const ImGuiDisabledScope disabled(d.on_tolerance_scale());
    if (ImGui::Button(fit_label)) {
      d.use_tolerance_scale();
      changed = true;
    }
  } else if (ImGui::Button(fit_label)) {
    changed = refit = true;
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(d.error_ratio ? "The fixed tolerance scale: 1/1000 to 1000 x tolerance, log, blue within the "
                                      "tolerance and red to yellow over it, the same in every run"
                                    : "Fit the range to the finite, unmasked values now");

  if (refit) d.fit(data);
  return changed;
}

}  // namespace ts
