#include "app/gui/heatmap_readout.h"

#include <string>

#include <imgui.h>

#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "app/gui/value_format.h"

namespace ts {
namespace {

void cell_row(const char* what, const std::optional<CellIndex>& cell, const HeatmapNavigation& nav,
              std::span<const HeatmapView* const> views) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("%s", what);
  ImGui::TableNextColumn();
  const ImGuiFontScope font(gui_fonts().mono);
  if (!cell) {
    ImGui::TextDisabled("-");
    for (size_t i = 0; i < views.size(); ++i) ImGui::TableNextColumn();
    return;
  }
  // Row and column in the caller's numbering (first_row / first_col of the first view).
  const HeatmapAxes& axes = views.front()->axes;
  ImGui::Text("row %lld, col %lld", static_cast<long long>(axes.first_row + cell->row),
              static_cast<long long>(axes.first_col + cell->col));
  (void)nav;
  for (const HeatmapView* v : views) {
    ImGui::TableNextColumn();
    const FloatGrid* g = v->data();
    if (!g || cell->row >= g->rows || cell->col >= g->cols) {
      ImGui::TextDisabled("-");
      continue;
    }
    const FloatGridView view = g->view();
    const float value = view.at(cell->row, cell->col);
    const uint8_t absent = view.absent(cell->row, cell->col);
    const CellClass k = classify_cell(value, absent);
    const std::string text = format_cell_value(value, absent);
    if (k == CellClass::finite) {
      ImGui::TextUnformatted(text.c_str());
    } else {
      const Rgba8 c = special_color(k);
      ImGui::TextColored(ImVec4(c.r / 255.f, c.g / 255.f, c.b / 255.f, 1.f), "%s", text.c_str());
    }
  }
}

}  // namespace

void draw_cell_readout(const HeatmapNavigation& nav, std::span<const HeatmapView* const> views) {
  if (views.empty()) return;
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersOuter | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;
  const ImGuiTableScope table("##readout", static_cast<int>(views.size()) + 2, flags);
  if (!table) return;
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("picked").x + 8);
  ImGui::TableSetupColumn("cell", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("row 00000, col 00000").x + 16);
  for (const HeatmapView* v : views) ImGui::TableSetupColumn(v->name().c_str());
  ImGui::TableHeadersRow();
  cell_row("cursor", nav.hovered, nav, views);
  cell_row("picked", nav.picked, nav, views);
}

}  // namespace ts
