#include "app/gui/synthetic_window.h"

#include <array>
#include <cstring>
#include <stdexcept>

#include <imgui.h>

#include "app/gui/color_bar.h"
#include "app/gui/error_injection.h"
#include "app/gui/heatmap_controls.h"
#include "app/gui/heatmap_export.h"
#include "app/gui/heatmap_readout.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "instrumentation/trace/display_text.h"

namespace ts {

SyntheticWindow::SyntheticWindow(const GuiOptions& o) : data_(make_synthetic_heatmaps(o.synthetic_rows, o.synthetic_cols, o.synthetic_seed)) {
  description_ = "Synthetic data (" + std::to_string(o.synthetic_rows) + " x " + std::to_string(o.synthetic_cols) + ", seed " +
                 std::to_string(o.synthetic_seed) +
                 "): an error growing with the query row, NaN and infinite cells, a masked corner.";
  trace_.set_data(std::make_shared<FloatGrid>(data_.trace), o.max_tile);
  reference_.set_data(std::make_shared<FloatGrid>(data_.reference), o.max_tile);
  diff_.set_data(std::make_shared<FloatGrid>(data_.diff), o.max_tile);
  for (HeatmapView* v : {&trace_, &reference_, &diff_}) v->axes = numbered_axes("query row", "head-dim column");

  values_display_.colormap = o.values_colormap.value_or(ColormapId::ember);
  values_display_.scale.log = o.values_scale == "log" || o.values_scale == "signed-log";
  values_display_.scale.symmetric = o.values_scale == "symmetric" || o.values_scale == "signed-log";
  values_display_.scale.log_floor = 1e-3f;
  const std::array<FloatGridView, 2> both = {data_.trace.view(), data_.reference.view()};
  values_display_.fit(both);
  reference_display_ = values_display_;
  diff_display_.colormap = ColormapId::diverging;
  diff_display_.scale.symmetric = true;
  const std::array<FloatGridView, 1> diff = {data_.diff.view()};
  diff_display_.fit(diff);
  animate_ = o.animate;
  if (o.pick) nav_.picked = *o.pick;  // within the grid (gui_options.cpp)
}

std::vector<HeatmapViewLayout> SyntheticWindow::layouts() const { return {trace_.layout(), reference_.layout(), diff_.layout()}; }

void SyntheticWindow::draw_toolbar() {
  if (ImGui::Button("Fit")) nav_.request_fit();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Whole arrays in view (F, or double-click an image)");
  ImGui::SameLine();
  if (ImGui::Checkbox("Square cells", &nav_.square_cells)) nav_.request_fit();
  ImGui::SameLine();
  if (ImGui::Checkbox("Link ranges", &link_reference_) && !link_reference_) reference_display_ = values_display_;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Trace and reference share one colour range, so equal values look equal");
  ImGui::SameLine();
  if (ImGui::Button("Export PNG...")) export_requested_ = true;
  ImGui::SameLine(0, 18);
  ImGui::TextDisabled("%s", description_.c_str());
}

void SyntheticWindow::draw(HeatmapRenderer& renderer, ErrorLog& errors, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  if (focus_once_) ImGui::SetNextWindowFocus();
  focus_once_ = false;
  // No background: it fills the whole window, and the frame is cleared to the same colour.
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus |
                                 ImGuiWindowFlags_NoBackground;
  if (const ImGuiWindowScope window("Synthetic heatmaps", nullptr, flags); window) {
    guarded_ui(errors, "synthetic heatmaps", [&] {
      draw_toolbar();
      ImGui::Spacing();
      nav_.begin_frame();
      if (animate_ && nav_.rows > 0) {
        // Zoom in for 60 frames, out for 60, around the centre: every frame re-renders.
        nav_.zoom((animate_frame_++ / 60) % 2 == 0 ? 0.125 : -0.125, nav_.view_w / 2, nav_.view_h / 2);
      }

      const ImGuiStyle& style = ImGui::GetStyle();
      const float line = ImGui::GetFrameHeightWithSpacing();
      const float controls_h = 2 * line;
      const float bar_h = ImGui::GetTextLineHeightWithSpacing() * 2 + 14;
      const float readout_h = 3 * (ImGui::GetTextLineHeight() + 2 * style.CellPadding.y) + 8;
      const float view_h = std::max(120.0f, ImGui::GetContentRegionAvail().y - controls_h - bar_h - readout_h - 3 * style.ItemSpacing.y);

      const std::array<FloatGridView, 2> values = {data_.trace.view(), data_.reference.view()};
      const std::array<FloatGridView, 1> diffs = {data_.diff.view()};
      if (const ImGuiTableScope table("##views", 3, ImGuiTableFlags_SizingStretchSame | ImGuiTableFlags_PadOuterX); table) {
        const HeatmapDisplay& ref_display = link_reference_ ? values_display_ : reference_display_;
        for (int c = 0; c < 3; ++c) {
          ImGui::TableNextColumn();
          const float width = ImGui::GetContentRegionAvail().x;
          const float y0 = ImGui::GetCursorPosY();
          const ImGuiIdScope column_id(c);
          if (c == 1) error_injection().throw_if_aimed_at("synthetic");  // mid-table, mid-ID-stack: the worst place
          if (c == 0) {
            draw_heatmap_controls("values", values_display_, values, width);
          } else if (c == 1) {
            if (link_reference_) {
              ImGui::AlignTextToFramePadding();
              ImGui::TextDisabled("Colour range shared with the trace (toolbar: Link ranges)");
            } else {
              const std::array<FloatGridView, 1> ref = {data_.reference.view()};
              draw_heatmap_controls("reference", reference_display_, ref, width);
            }
          } else {
            draw_heatmap_controls("diff", diff_display_, diffs, width);
          }
          ImGui::SetCursorPosY(std::max(ImGui::GetCursorPosY(), y0 + controls_h));
          HeatmapView& view = c == 0 ? trace_ : c == 1 ? reference_ : diff_;
          const HeatmapDisplay& display = c == 0 ? values_display_ : c == 1 ? ref_display : diff_display_;
          view.draw(renderer, nav_, display, ImVec2(width, view_h));
          ImGui::Spacing();
          const float bar_indent = view.layout().image_min_x - ImGui::GetCursorScreenPos().x;
          ImGui::SetCursorPosX(ImGui::GetCursorPosX() + bar_indent);
          draw_color_bar(renderer.colormaps(), display, view.stats(), width - bar_indent - 4);
        }
      }
      handle_heatmap_keys(nav_);
      ImGui::Spacing();
      const std::array<const HeatmapView*, 3> views = {&trace_, &reference_, &diff_};
      draw_cell_readout(nav_, views);
      draw_export_dialog(errors);
    });
  }
}

void SyntheticWindow::draw_export_dialog(ErrorLog& errors) {
  if (export_requested_) {
    ImGui::OpenPopup("Export heatmaps as PNG");
    export_requested_ = false;
    export_status_.clear();
  }
  ImGui::SetNextWindowSize(ImVec2(520, 0));
  if (const ImGuiPopupModalScope popup("Export heatmaps as PNG", nullptr, ImGuiWindowFlags_NoSavedSettings); popup) {
    ImGui::TextWrapped("Writes trace.png, reference.png and diff.png (colour bar, axes, title) with the current "
                       "colormaps and ranges, into a new folder (or an earlier export, which it replaces).");
    char folder[1024];
    std::snprintf(folder, sizeof folder, "%s", export_folder_.c_str());
    ImGui::SetNextItemWidth(-1);
    if (ImGui::InputText("##folder", folder, sizeof folder)) export_folder_ = folder;
    if (!export_status_.empty()) ImGui::TextDisabled("%s", printable(export_status_).c_str());
    if (ImGui::Button("Export", ImVec2(120, 0))) export_pngs(errors);
    ImGui::SameLine();
    if (ImGui::Button("Close", ImVec2(120, 0))) ImGui::CloseCurrentPopup();
  }
}

void SyntheticWindow::export_pngs(ErrorLog& errors) {
  const std::filesystem::path folder = export_folder_;
  // One export folder (staged_folder.h): it appears whole, and replaces only an earlier export.
  const std::vector<ExportableHeatmap> heatmaps = {
      exportable("trace", trace_, std::make_shared<FloatGrid>(data_.trace), values_display_, trace_.name() + " (demo)"),
      exportable("reference", reference_, std::make_shared<FloatGrid>(data_.reference),
                 link_reference_ ? values_display_ : reference_display_, reference_.name() + " (demo)"),
      exportable("diff", diff_, std::make_shared<FloatGrid>(data_.diff), diff_display_, diff_.name() + " (demo)")};
  const bool ok = guarded(errors, "export PNG", [&] {
    const size_t written = write_heatmap_exports(folder, heatmaps, /*png=*/true, /*npy=*/false).size();
    export_status_ = "Wrote " + std::to_string(written) + " files to " + folder.string();
  });
  if (!ok) export_status_ = "Nothing written (see the error)";
}

}  // namespace ts
