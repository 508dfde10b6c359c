#include "app/gui/overview_panel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include <imgui.h>

#include "app/gui/color_bar.h"
#include "app/gui/error_injection.h"
#include "app/gui/heatmap_controls.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "app/gui/value_format.h"

namespace ts {
namespace {

// Errors over tolerance span orders of magnitude: a log scale, floored well below 1.
HeatmapDisplay error_display() {
  HeatmapDisplay d;
  d.colormap = ColormapId::ember;
  d.scale.log = true;
  d.scale.log_floor = 1e-3f;
  return d;
}

std::string pair_text(int32_t b, int32_t h) { return "batch " + std::to_string(b) + ", head " + std::to_string(h); }

std::string grid_stage_text(GridStage g, KernelKind kernel) {
  if (!g) return kernel == KernelKind::fa1 ? "worst of fa1.step" : "worst of splitk.partial + reduce";
  return kStageNames[static_cast<int>(*g)];
}

// Keeps a pick that is already inside the cells; else moves it to their first cell.
void sync_pick(HeatmapNavigation& nav, const CellRect& cells) {
  if (nav.picked && cells.contains(nav.picked->row, nav.picked->col)) return;
  nav.picked = CellIndex{cells.row0, cells.col0};
}

}  // namespace

OverviewPanel::OverviewPanel() : grid_display_(error_display()), navigator_display_(error_display()) {}

std::vector<HeatmapViewLayout> OverviewPanel::layouts() const {
  std::vector<HeatmapViewLayout> out;
  if (grid_) out.push_back(grid_view_.layout());
  for (const NavigatorView& n : navigator_) out.push_back(n.view->layout());
  return out;
}

std::vector<ExportableHeatmap> OverviewPanel::exportables() const {
  std::vector<ExportableHeatmap> out;
  if (grid_) out.push_back(exportable("overview_error_grid", grid_view_, grid_, grid_display_, grid_title_));
  for (const NavigatorView& n : navigator_)
    out.push_back(exportable(std::string("navigator_") + kStageNames[static_cast<int>(n.stage)], *n.view, n.grid,
                             navigator_display_,
                             std::string("worst error / tolerance per tile, ") + kStageNames[static_cast<int>(n.stage)]));
  for (ExportableHeatmap& e : out)
    std::replace(e.stem.begin(), e.stem.end(), '.', '_');
  return out;
}

void OverviewPanel::update(ViewerSession& s) {
  const RunView* run = s.has_run() ? &s.view() : nullptr;
  const auto pair = s.pair();
  if (run == shown_run_ && pair == shown_pair_ && s.overview_stage == shown_stage_) return;
  const bool new_run = run != shown_run_;
  shown_run_ = run;
  shown_pair_ = pair;
  shown_stage_ = s.overview_stage;
  grid_.reset();
  grid_view_.set_data(nullptr);
  if (new_run) navigator_.clear();
  if (!run) return;

  if (const ErrorGrid* g = s.overview_grid()) {
    grid_ = std::make_shared<FloatGrid>(g->grid);
    grid_view_.set_data(grid_);
    grid_view_.axes = {"query index", g->column_axis, 0, 0};
    grid_title_ = "worst error / tolerance by query index and " + g->column_axis + ", " +
                  grid_stage_text(s.overview_stage, run->config.kernel) + ", " + pair_text(pair.first, pair.second);
    const std::array<FloatGridView, 1> data = {grid_->view()};
    if (grid_display_.auto_range) grid_display_.fit(data);
  }
  const std::vector<TileGrid>& tiles = s.navigator();
  if (navigator_.size() != tiles.size()) navigator_.clear();
  std::vector<FloatGridView> all;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (navigator_.size() <= i) {
      navigator_.push_back({tiles[i].stage,
                            std::make_unique<HeatmapView>(std::string("Navigator ") +
                                                          kStageNames[static_cast<int>(tiles[i].stage)]),
                            {}, nullptr});
    }
    NavigatorView& n = navigator_[i];
    n.stage = tiles[i].stage;
    n.grid = std::make_shared<FloatGrid>(tiles[i].values);
    n.view->set_data(n.grid);
    n.view->axes = {"query tile", tiles[i].col_axis, 0, 0};
    all.push_back(n.grid->view());
  }
  if (navigator_display_.auto_range && !all.empty()) navigator_display_.fit(all);
}

void OverviewPanel::draw_selectors(ViewerSession& s) {
  const auto [b, h] = s.pair();
  if (s.pairs().size() > 1) {
    ImGui::SetNextItemWidth(170);
    if (const ImGuiComboScope combo("##pair", pair_text(b, h).c_str()); combo) {
      for (const auto& [pb, ph] : s.pairs())
        if (ImGui::Selectable(pair_text(pb, ph).c_str(), pb == b && ph == h)) s.select_pair(pb, ph);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("The (batch, head) pair the overview shows");
    ImGui::SameLine();
  } else {
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("%s", pair_text(b, h).c_str());
    ImGui::SameLine();
  }
  const KernelKind kernel = s.view().config.kernel;
  ImGui::SetNextItemWidth(260);
  if (const ImGuiComboScope combo("##grid", grid_stage_text(s.overview_stage, kernel).c_str()); combo) {
    if (ImGui::Selectable(grid_stage_text(std::nullopt, kernel).c_str(), !s.overview_stage)) s.overview_stage.reset();
    for (const ErrorGrid& g : s.report().grids)
      if (g.batch == b && g.head == h && ImGui::Selectable(kStageNames[static_cast<int>(g.stage)], s.overview_stage == g.stage))
        s.overview_stage = g.stage;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Which stage's errors the grid shows");
}

void OverviewPanel::draw_verdict_table(ViewerSession& s) {
  const AnalysisReport& r = s.report();
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersOuter | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_SizingFixedFit;
  const ImGuiTableScope table("##verdicts", 6, flags);
  if (!table) return;
  ImGui::TableSetupColumn("stage");
  ImGui::TableSetupColumn("verdict");
  ImGui::TableSetupColumn("events failing");
  ImGui::TableSetupColumn("rows failing");
  ImGui::TableSetupColumn("worst err / tol");
  ImGui::TableSetupColumn("NaN / +Inf / -Inf");
  ImGui::TableHeadersRow();
  for (const StageReport& st : r.stages) {
    if (!st.traced) continue;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    const ImGuiIdScope id(static_cast<int>(st.stage));
    error_injection().throw_if_aimed_at("overview");  // mid-table, mid-ID-stack
    const bool can_go = st.first_failing_event >= 0;
    if (ImGui::Selectable(kStageNames[static_cast<int>(st.stage)], false, ImGuiSelectableFlags_SpanAllColumns) && can_go)
      s.stepper().select(static_cast<size_t>(st.first_failing_event));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s (stored %s)\nmax |error| of O/l %s, m %s, l (relative) %s\n%s",
                        kStageNames[static_cast<int>(st.stage)], st.convention.c_str(),
                        format_short(st.o_norm.max_abs).c_str(), format_short(st.m.max_abs).c_str(),
                        format_short(st.l.max_rel).c_str(),
                        can_go ? "click: show its first failing event" : "no failing event");
    ImGui::TableNextColumn();
    if (st.clean()) ImGui::TextColored(ImColor(theme::kPass), "pass");
    else ImGui::TextColored(ImColor(theme::kFail), "FAIL");
    ImGui::TableNextColumn();
    ImGui::Text("%llu / %llu", static_cast<unsigned long long>(st.events_failing),
                static_cast<unsigned long long>(st.events_compared));
    if (st.events_missing) {
      ImGui::SameLine();
      ImGui::TextColored(ImColor(theme::kWarn), "+%llu missing", static_cast<unsigned long long>(st.events_missing));
    }
    ImGui::TableNextColumn();
    ImGui::Text("%llu / %llu", static_cast<unsigned long long>(st.rows_failing),
                static_cast<unsigned long long>(st.rows_compared));
    ImGui::TableNextColumn();
    const double worst = std::max({st.m.max_ratio, st.l.max_ratio, st.o_norm.max_ratio, st.o_raw.max_ratio});
    ImGui::TextColored(ImColor(worst > 1 ? theme::kFail : theme::kDimText), "%s",
                       std::isinf(worst) ? "inf" : format_short(worst).c_str());
    ImGui::TableNextColumn();
    const NonFiniteCounts& nf = st.non_finite;
    const std::string counts = std::to_string(nf.nan) + " / " + std::to_string(nf.pos_inf) + " / " + std::to_string(nf.neg_inf);
    if (nf.total()) ImGui::TextColored(ImColor(theme::kFail), "%s", counts.c_str());
    else ImGui::TextDisabled("%s", counts.c_str());
  }
}

void OverviewPanel::frame_cells(const HeatmapView& view, const CellRect& cells, const char* name, bool divergence) {
  const HeatmapViewLayout& l = view.layout();
  if (l.rows == 0) return;
  const float x0 = static_cast<float>(l.origin_x + static_cast<double>(cells.col0) * l.px_per_col);
  const float x1 = static_cast<float>(l.origin_x + static_cast<double>(cells.col1) * l.px_per_col);
  const float y0 = static_cast<float>(l.origin_y + static_cast<double>(cells.row0) * l.px_per_row);
  const float y1 = static_cast<float>(l.origin_y + static_cast<double>(cells.row1) * l.px_per_row);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImDrawListClipScope clip(dl, ImVec2(l.image_min_x, l.image_min_y), ImVec2(l.image_max_x, l.image_max_y));
  // At least a few pixels tall, so a one-row divergence in 8192 rows is still a visible frame.
  const float cy = (y0 + y1) / 2, half = std::max((y1 - y0) / 2, 3.0f);
  const ImVec2 a(std::floor(x0), std::floor(cy - half)), b(std::ceil(x1), std::ceil(cy + half));
  // Inside the cells' edges, so that the image's border never clips it: a 2-pixel frame in the
  // mark's colour with a dark line inside it, visible on every colormap.
  if (divergence) {
    dl->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(b.x - 1, b.y - 1), theme::kDivergenceMark, 0, 0, 2.0f);
    dl->AddRect(ImVec2(a.x + 2.5f, a.y + 2.5f), ImVec2(b.x - 2.5f, b.y - 2.5f), IM_COL32(0, 0, 0, 200), 0, 0, 1.0f);
  } else {
    dl->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(b.x - 1, b.y - 1), theme::kSelectionMark, 0, 0, 2.0f);
  }
  marks_.push_back({name, view.name(), a.x, a.y, b.x, b.y, cells.row0, cells.row1, cells.col0, cells.col1});
}

void OverviewPanel::draw_error_grid(ViewerSession& s, HeatmapRenderer& renderer, ImVec2 size) {
  if (!grid_) {
    ImGui::TextDisabled("No error grid for this pair (no intermediate stage traced).");
    return;
  }
  const std::array<FloatGridView, 1> data = {grid_->view()};
  const float bar_h = ImGui::GetTextLineHeightWithSpacing() * 2 + 14;
  draw_heatmap_controls("grid", grid_display_, data, size.x);
  const float view_h = std::max(100.0f, size.y - 2 * ImGui::GetFrameHeightWithSpacing() - bar_h);
  grid_nav_.begin_frame();
  grid_view_.draw(renderer, grid_nav_, grid_display_, ImVec2(size.x, view_h));
  const HeatmapViewLayout& l = grid_view_.layout();
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + (l.image_min_x - ImGui::GetCursorScreenPos().x));
  draw_color_bar(renderer.colormaps(), grid_display_, grid_view_.stats(), l.image_max_x - l.image_min_x);

  // A click (or arrow key) on a cell selects the event the analysis blames there.
  if (grid_nav_.picked && grid_nav_.picked != last_grid_pick_) {
    const auto [b, h] = s.pair();
    if (const auto e = event_for_grid_cell(s.view(), s.report(), s.overview_stage, b, h, grid_nav_.picked->row,
                                           grid_nav_.picked->col)) {
      s.stepper().select(*e);
    }
  }
  const auto [b, h] = s.pair();
  if (const auto key = s.selected_key())
    if (const auto cells = grid_cells_of(*key, s.view().tiling, s.overview_stage, b, h, grid_->cols)) {
      sync_pick(grid_nav_, *cells);
      frame_cells(grid_view_, *cells, "selected event", false);
    }
  if (const auto key = divergence_key(s.report()))
    if (const auto cells = grid_cells_of(*key, s.view().tiling, s.overview_stage, b, h, grid_->cols))
      frame_cells(grid_view_, *cells, "first divergence", true);
  // Clicks and arrow keys (handled after this) show as a change from this by the next frame.
  last_grid_pick_ = grid_nav_.picked;
}

void OverviewPanel::draw_navigator(ViewerSession& s, HeatmapRenderer& renderer, ImVec2 size) {
  if (navigator_.empty()) return;
  const std::vector<TileGrid>& tiles = s.navigator();
  const int n = static_cast<int>(navigator_.size());
  std::optional<size_t> clicked;
  {
    const ImGuiTableScope table("##navigator", n, ImGuiTableFlags_SizingStretchSame);
    if (!table) return;
    const std::optional<EventKey> selected = s.selected_key();
    const std::optional<EventKey> divergence = divergence_key(s.report());
    for (int i = 0; i < n && i < static_cast<int>(tiles.size()); ++i) {
      ImGui::TableNextColumn();
      const ImGuiIdScope id(i);
      NavigatorView& nv = navigator_[static_cast<size_t>(i)];
      nv.nav.begin_frame();
      // The pick shows the selection; a click moves it, which selects the tile's event.
      nv.nav.picked.reset();
      if (selected)
        if (const auto c = tiles[static_cast<size_t>(i)].cell_of(*selected)) nv.nav.picked = CellIndex{c->row, c->col};
      const std::optional<CellIndex> synced = nv.nav.picked;
      nv.view->draw(renderer, nv.nav, navigator_display_, ImVec2(ImGui::GetContentRegionAvail().x, size.y));
      if (nv.nav.picked && nv.nav.picked != synced)
        clicked = tiles[static_cast<size_t>(i)].event_at(nv.nav.picked->row, nv.nav.picked->col);
      if (divergence)
        if (const auto c = tiles[static_cast<size_t>(i)].cell_of(*divergence))
          frame_cells(*nv.view, CellRect{c->row, c->row + 1, c->col, c->col + 1}, "first divergence", true);
    }
  }
  if (clicked) s.stepper().select(*clicked);
}

void OverviewPanel::draw(ViewerSession& s, HeatmapRenderer& renderer, ErrorLog& errors, ImVec2 size) {
  (void)errors;
  marks_.clear();
  update(s);
  if (!s.has_run()) return;
  const ImVec2 start = ImGui::GetCursorPos();
  draw_selectors(s);
  update(s);
  draw_verdict_table(s);
  ImGui::Spacing();
  const float used = ImGui::GetCursorPosY() - start.y;
  const float rest = std::max(200.0f, size.y - used);
  const float navigator_h = std::clamp(rest * 0.36f, 110.0f, 320.0f);
  const float grid_h = rest - navigator_h - ImGui::GetTextLineHeightWithSpacing() - 2 * ImGui::GetStyle().ItemSpacing.y;
  draw_error_grid(s, renderer, ImVec2(size.x, grid_h));
  handle_heatmap_keys(grid_nav_);
  ImGui::TextDisabled("Tile navigator: worst error / tolerance of each event (click a tile to show it)");
  draw_navigator(s, renderer, ImVec2(size.x, std::max(60.0f, size.y - (ImGui::GetCursorPosY() - start.y) - 4)));
}

}  // namespace ts
