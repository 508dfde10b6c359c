#include "app/gui/overview_panel.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <numeric>
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

// Error / tolerance: the one fixed scale every error map is drawn with (colormap.h).
HeatmapDisplay error_display() { return HeatmapDisplay::for_error_ratio(); }

std::string pair_text(int32_t b, int32_t h) { return "batch " + std::to_string(b) + ", head " + std::to_string(h); }

// What a grid of the pair shows, by the stage table's names: "worst of splitk.tile + splitk.partial
// + splitk.reduce" (the overview: the pair's non-final stages with grids), or one stage's name.
std::string grid_stage_text(const AnalysisReport& r, int32_t grid_stage, int32_t batch, int32_t head) {
  if (grid_stage != kOverviewGrid) return r.stage_name(grid_stage);
  std::string names;
  for (const ErrorGrid& g : r.grids)
    if (g.batch == batch && g.head == head && r.stage_table[static_cast<size_t>(g.stage)].kind != StageKind::final)
      names += (names.empty() ? "" : " + ") + r.stage_name(g.stage);
  return names.empty() ? "overview (no state stage traced)" : "worst of " + names;
}

// Key positions across (event_grids.h: key_column_axis says how they read).
void set_key_columns(HeatmapAxes& axes, const std::vector<int64_t>& column_keys, int64_t seq_kv) {
  ColumnAxis cols = key_column_axis(column_keys, seq_kv);
  axes.col_label = std::move(cols.label);
  axes.col_values = std::move(cols.values);
}

// A grid's axes: query indices down (pooled rows numbered by their first query), key positions
// across.
HeatmapAxes grid_axes(const ErrorGrid& g, int64_t seq_kv) {
  HeatmapAxes axes;
  axes.row_label = query_axis_label(g.rows_per_cell);
  if (g.rows_per_cell > 1) {
    axes.row_values.emplace();
    for (int64_t r = 0; r < g.grid.rows; ++r) axes.row_values->push_back(r * g.rows_per_cell);
  }
  set_key_columns(axes, g.column_keys, seq_kv);
  return axes;
}

// A navigator's axes: its row blocks, numbered by their first query, down; key positions across.
HeatmapAxes navigator_axes(const NavigatorGrid& g, int64_t seq_kv) {
  HeatmapAxes axes;
  axes.row_label = "first query";
  axes.row_values.emplace();
  for (const RowBlock& b : g.row_blocks) axes.row_values->push_back(b.q_begin);
  set_key_columns(axes, g.column_keys, seq_kv);
  return axes;
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
  if (pairs_grid_) out.push_back(pairs_view_.layout());
  else if (grid_) out.push_back(grid_view_.layout());
  for (const NavigatorView& n : navigator_)
    if (n.grid) out.push_back(n.view->layout());
  return out;
}

std::vector<ExportableHeatmap> OverviewPanel::exportables() const {
  std::vector<ExportableHeatmap> out;
  if (pairs_grid_)
    out.push_back(exportable("overview_pairs", pairs_view_, pairs_grid_, grid_display_,
                             "worst error / tolerance by (batch, query head) and keys covered"));
  if (grid_) out.push_back(exportable("overview_error_grid", grid_view_, grid_, grid_display_, grid_title_));
  for (const NavigatorView& n : navigator_) {
    if (!n.grid) continue;
    const std::string name = shown_run_ ? shown_run_->stages[static_cast<size_t>(n.stage)].name : "stage";
    out.push_back(exportable("navigator_" + name, *n.view, n.grid, navigator_display_,
                             "worst error / tolerance per event, " + name));
  }
  // Stage names are the trace's: keep file names to letters, digits, '-' and '_'.
  for (ExportableHeatmap& e : out)
    for (char& c : e.stem)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return out;
}

void OverviewPanel::update(ViewerSession& s) {
  const RunView* run = s.has_run() ? &s.view() : nullptr;
  const auto pair = s.pair();
  if (run == shown_run_ && pair == shown_pair_ && s.grid_stage == shown_stage_) return;
  const bool new_run = run != shown_run_;
  shown_run_ = run;
  shown_pair_ = pair;
  shown_stage_ = s.grid_stage;
  grid_.reset();
  grid_view_.set_data(nullptr);
  grid_name_.clear();
  listed_stages_.clear();
  if (new_run) {
    navigator_.clear();
    pairs_.reset();
    pairs_grid_.reset();
    pairs_view_.set_data(nullptr);
    last_pairs_pick_.reset();
    if (run && shows_pair_overview(*run)) {
      pairs_ = pair_overview(*run, s.report());
      if (pairs_->values.rows > 0) {
        pairs_grid_ = std::make_shared<FloatGrid>(pairs_->values);
        pairs_view_.set_data(pairs_grid_);
        HeatmapAxes axes;
        // Each row says its batch and its query head: head numbers alone restart at every batch.
        axes.row_label = "batch, query head";
        axes.row_names.emplace();
        for (const auto& [batch, head] : pairs_->pairs)
          axes.row_names->push_back("b" + std::to_string(batch) + " h" + std::to_string(head));
        set_key_columns(axes, pairs_->column_keys, run->attention.seq_kv);
        pairs_view_.axes = std::move(axes);
        pairs_view_.set_title("worst error / tolerance, every pair, by keys covered");
        const std::array<FloatGridView, 1> data = {pairs_grid_->view()};
        if (grid_display_.auto_range) grid_display_.fit(data);
      }
    }
  }
  if (!run) return;

  for (const StageReport& st : s.report().stages)
    if (st.traced) listed_stages_.push_back(st.info.name);
  if (const ErrorGrid* g = s.overview_grid()) {
    grid_ = std::make_shared<FloatGrid>(g->grid);
    grid_view_.set_data(grid_);
    grid_view_.axes = grid_axes(*g, run->attention.seq_kv);
    grid_name_ = grid_stage_text(s.report(), g->stage, pair.first, pair.second);
    grid_title_ = "worst error / tolerance by query index and keys covered, " + grid_name_ + ", " +
                  pair_text(pair.first, pair.second);
    const std::array<FloatGridView, 1> data = {grid_->view()};
    if (grid_display_.auto_range) grid_display_.fit(data);
  }
  const std::vector<NavigatorGrid>& grids = s.navigator();
  if (navigator_.size() != grids.size()) navigator_.clear();
  std::vector<FloatGridView> all;
  for (size_t i = 0; i < grids.size(); ++i) {
    const std::string& name = run->stages[static_cast<size_t>(grids[i].stage)].name;
    if (navigator_.size() <= i) navigator_.push_back({grids[i].stage, nullptr, {}, nullptr});
    NavigatorView& n = navigator_[i];
    if (!n.view || n.stage != grids[i].stage) {
      n.view = std::make_unique<HeatmapView>("Navigator " + name);
      n.view->set_title(name);
    }
    n.stage = grids[i].stage;
    n.grid = grids[i].omitted.empty() ? std::make_shared<FloatGrid>(grids[i].values) : nullptr;
    n.view->set_data(n.grid);
    n.view->axes = navigator_axes(grids[i], run->attention.seq_kv);
    if (n.grid) all.push_back(n.grid->view());
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
  const AnalysisReport& r = s.report();
  ImGui::SetNextItemWidth(std::max(200.0f, ImGui::GetContentRegionAvail().x));
  if (const ImGuiComboScope combo("##grid", grid_stage_text(r, s.grid_stage, b, h).c_str()); combo) {
    if (ImGui::Selectable(grid_stage_text(r, kOverviewGrid, b, h).c_str(), s.grid_stage == kOverviewGrid))
      s.grid_stage = kOverviewGrid;
    for (const ErrorGrid& g : r.grids)
      if (g.batch == b && g.head == h && ImGui::Selectable(r.stage_name(g.stage).c_str(), s.grid_stage == g.stage))
        s.grid_stage = g.stage;
  }
  // The label can be wider than a narrow window's panel (1366 x 768): the tooltip holds it whole.
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Which stage's errors the grid shows: %s", grid_stage_text(r, s.grid_stage, b, h).c_str());
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
    if (ImGui::Selectable(st.info.name.c_str(), false, ImGuiSelectableFlags_SpanAllColumns) && can_go)
      s.stepper().select(static_cast<size_t>(st.first_failing_event));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s: %s stage, pass %d (stored %s)\nmax |error| of O/l %s, m %s, l (relative) %s\n%s",
                        st.info.name.c_str(), std::string(to_string(st.info.kind)).c_str(),
                        static_cast<int>(st.info.pass), st.convention.c_str(), format_short(st.o_norm.max_abs).c_str(),
                        format_short(st.m.max_abs).c_str(), format_short(st.l.max_rel).c_str(),
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
    if (st.events_not_compared) {
      ImGui::SameLine();
      ImGui::TextColored(ImColor(theme::kWarn), "+%llu not compared", static_cast<unsigned long long>(st.events_not_compared));
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("recorded but left out of the comparison; event %lld: %s",
                          static_cast<long long>(st.first_not_compared_event), st.not_compared_reason.c_str());
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
    ImGui::TextDisabled("No error grid of this pair for %s.", grid_stage_text(s.report(), s.grid_stage, s.pair().first,
                                                                                s.pair().second).c_str());
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
  const ErrorGrid* grid = s.overview_grid();
  if (!grid) return;
  const RunView& run = s.view();
  if (grid_nav_.picked && grid_nav_.picked != last_grid_pick_)
    if (const auto e = event_for_grid_cell(run, s.report(), *grid, grid_nav_.picked->row, grid_nav_.picked->col))
      s.stepper().select(*e);
  if (const EventHeader* h = s.selected_header())
    if (const auto cells = grid_cells_of(*grid, *h, run.stages, run.attention)) {
      sync_pick(grid_nav_, *cells);
      frame_cells(grid_view_, *cells, "selected event", false);
    }
  if (const auto d = divergence_header(s.report()))
    if (const auto cells = grid_cells_of(*grid, *d, run.stages, run.attention))
      frame_cells(grid_view_, *cells, "first divergence", true);
  // Clicks and arrow keys (handled after this) show as a change from this by the next frame.
  last_grid_pick_ = grid_nav_.picked;
}

void OverviewPanel::draw_pair_overview(ViewerSession& s, HeatmapRenderer& renderer, ImVec2 size) {
  const PairOverview& o = *pairs_;
  const RunView& run = s.view();
  const std::array<FloatGridView, 1> data = {pairs_grid_->view()};
  const float bar_h = ImGui::GetTextLineHeightWithSpacing() * 2 + 14;
  const int64_t group = std::max<int64_t>(1, run.attention.group_size());
  const std::string grouping = group > 1 ? "; dark lines and labels: GQA groups of " + std::to_string(group) : "";
  ImGui::TextDisabled("%zu pairs x %zu key positions; white lines: batches%s", o.pairs.size(), o.column_keys.size(),
                      grouping.c_str());
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Few query rows: a row per (batch, query head), rows by batch, then kv head, then query head.\n"
                      "A cell: the pair's worst error / tolerance at that key position. Click: open that pair there.");
  draw_heatmap_controls("pairs", grid_display_, data, size.x);
  const float view_h = std::max(100.0f, size.y - 3 * ImGui::GetFrameHeightWithSpacing() - bar_h);
  // GQA: a column right of the grid names each group ("kv head 0: heads 0-3"), the batch
  // before it where there are several.
  const bool batches = !o.groups.empty() && o.groups.front().batch != o.groups.back().batch;
  const auto group_text = [&](const PairGroup& g) {
    return (batches ? "batch " + std::to_string(g.batch) + ", " : std::string()) + g.label;
  };
  float labels_w = 0;
  if (group > 1)
    for (const PairGroup& g : o.groups) labels_w = std::max(labels_w, ImGui::CalcTextSize(group_text(g).c_str()).x + 16);
  labels_w = std::min(labels_w, size.x * 0.4f);
  const ImVec2 view_at = ImGui::GetCursorScreenPos();
  pairs_nav_.begin_frame();
  pairs_view_.draw(renderer, pairs_nav_, grid_display_, ImVec2(size.x - labels_w, view_h));
  const HeatmapViewLayout& l = pairs_view_.layout();
  const ImVec2 after_view = ImGui::GetCursorScreenPos();

  // The groups: a thin dark line between kv heads, a light one between batches, so a GQA group's
  // query heads read as one block.
  if (l.rows > 0) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    {
      const ImDrawListClipScope clip(dl, ImVec2(l.image_min_x, l.image_min_y), ImVec2(l.image_max_x, l.image_max_y));
      const float x0 = static_cast<float>(l.origin_x), x1 = static_cast<float>(l.origin_x + l.px_per_col * l.cols);
      for (size_t g = 1; g < o.groups.size(); ++g) {
        const float y = std::round(static_cast<float>(l.origin_y + l.px_per_row * o.groups[g].row0));
        const bool new_batch = o.groups[g].batch != o.groups[g - 1].batch;
        if (!new_batch && group == 1) continue;  // MHA: a line under every row would hide the cells
        dl->AddLine(ImVec2(x0, y), ImVec2(x1, y), new_batch ? IM_COL32(255, 255, 255, 230) : IM_COL32(0, 0, 0, 220),
                    new_batch ? 2.0f : 1.0f);
      }
    }
    if (labels_w > 0) {
      // A bracket beside each group's rows and its label at the bracket's middle; a label that
      // would overlap the one above (groups thinner than a line of text) is left out.
      const float line = ImGui::GetTextLineHeight();
      const float bx = std::floor(l.image_max_x) + 5;
      float free_y = l.image_min_y;
      const ImDrawListClipScope clip(dl, ImVec2(bx - 1, l.image_min_y), ImVec2(view_at.x + size.x, l.image_max_y));
      for (const PairGroup& g : o.groups) {
        const float y0 = static_cast<float>(l.origin_y + l.px_per_row * g.row0);
        const float y1 = static_cast<float>(l.origin_y + l.px_per_row * g.row1);
        if (y1 < l.image_min_y || y0 > l.image_max_y) continue;
        dl->AddLine(ImVec2(bx, y0 + 2), ImVec2(bx, y1 - 2), theme::kDimText);
        const std::string text = group_text(g);
        const float ty = std::round((std::max(y0, l.image_min_y) + std::min(y1, l.image_max_y) - line) / 2);
        if (ty < free_y) continue;
        const float tw = ImGui::CalcTextSize(text.c_str()).x;
        dl->AddText(ImVec2(bx + 6, ty), ImGui::GetColorU32(ImGuiCol_Text), text.c_str());
        marks_.push_back({"group " + text, pairs_view_.name(), bx + 6, ty, bx + 6 + tw, ty + line, g.row0, g.row1, 0,
                          static_cast<int64_t>(o.column_keys.size())});
        free_y = ty + line + 2;
      }
    }
  }
  ImGui::SetCursorScreenPos(after_view);
  if (pairs_nav_.hovered) {
    const auto [r, c] = std::pair(pairs_nav_.hovered->row, pairs_nav_.hovered->col);
    if (r >= 0 && r < static_cast<int64_t>(o.pairs.size()) && c >= 0 && c < static_cast<int64_t>(o.column_keys.size())) {
      const auto [b, h] = o.pairs[static_cast<size_t>(r)];
      ImGui::SetTooltip("batch %d, head %d (kv head %lld), keys up to %lld\nclick: show this pair's event there", b, h,
                        static_cast<long long>(run.attention.kv_head_of(h)),
                        static_cast<long long>(o.column_keys[static_cast<size_t>(c)] - 1));
    }
  }
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + (l.image_min_x - ImGui::GetCursorScreenPos().x));
  draw_color_bar(renderer.colormaps(), grid_display_, pairs_view_.stats(), l.image_max_x - l.image_min_x);

  // A click (or arrow key) on a cell opens that pair at that key position.
  if (pairs_nav_.picked && pairs_nav_.picked != last_pairs_pick_)
    if (const auto e = pair_overview_event(o, run, s.report(), pairs_nav_.picked->row, pairs_nav_.picked->col))
      s.stepper().select(*e);
  if (const EventHeader* h = s.selected_header())
    if (const auto c = o.cell_of(run, *h)) {
      sync_pick(pairs_nav_, CellRect{c->row, c->row + 1, c->col, c->col + 1});
      frame_cells(pairs_view_, CellRect{c->row, c->row + 1, c->col, c->col + 1}, "selected event", false);
    }
  if (o.divergence)
    frame_cells(pairs_view_, CellRect{o.divergence->row, o.divergence->row + 1, o.divergence->col, o.divergence->col + 1},
                "first divergence", true);
  last_pairs_pick_ = pairs_nav_.picked;
}

void OverviewPanel::draw_navigator(ViewerSession& s, HeatmapRenderer& renderer, ImVec2 size) {
  if (navigator_.empty()) return;
  const std::vector<NavigatorGrid>& grids = s.navigator();
  const int n = static_cast<int>(navigator_.size());
  const RunView& run = s.view();
  // Where an event sits on a navigator grid (its stage's key end is its column).
  const auto cell_on = [&](const NavigatorGrid& g, const EventHeader& h) -> std::optional<GridCell> {
    if (h.stage < 0 || static_cast<size_t>(h.stage) >= run.num_stages()) return std::nullopt;
    return g.cell_of(h, event_key_end(h, run.stages[static_cast<size_t>(h.stage)], run.attention));
  };
  std::optional<size_t> clicked;
  {
    const ImGuiTableScope table("##navigator", n, ImGuiTableFlags_SizingStretchProp);
    if (!table) return;
    // Wider for more key positions, a stage of one column (the output) needing little room for
    // its cells; but every one wide enough for its axes and its key label, which a narrow column
    // clipped (five stages at 1600 pixels). Where not all of them fit, equal widths.
    const int columns = std::min(n, static_cast<int>(grids.size()));
    std::vector<float> weights(static_cast<size_t>(columns));
    for (int i = 0; i < columns; ++i)
      weights[static_cast<size_t>(i)] =
          1.0f + static_cast<float>(std::min<int64_t>(grids[static_cast<size_t>(i)].values.cols, 16)) / 4;
    const float avail = ImGui::GetContentRegionAvail().x;
    const float least = ImGui::CalcTextSize("keys up to").x + 3 * ImGui::GetFontSize();
    if (avail <= 0 || least * static_cast<float>(columns) >= avail) {
      std::fill(weights.begin(), weights.end(), 1.0f);
    } else {
      for (int pass = 0; pass < 3; ++pass) {  // raising one weight narrows the others a little
        const float total = std::accumulate(weights.begin(), weights.end(), 0.0f);
        for (float& w : weights) w = std::max(w, least * total / avail);
      }
    }
    for (int i = 0; i < columns; ++i)
      ImGui::TableSetupColumn(nullptr, ImGuiTableColumnFlags_WidthStretch, weights[static_cast<size_t>(i)]);
    const EventHeader* selected = s.selected_header();
    const std::optional<EventHeader> divergence = divergence_header(s.report());
    for (int i = 0; i < n && i < static_cast<int>(grids.size()); ++i) {
      ImGui::TableNextColumn();
      const ImGuiIdScope id(i);
      NavigatorView& nv = navigator_[static_cast<size_t>(i)];
      const NavigatorGrid& g = grids[static_cast<size_t>(i)];
      if (!g.omitted.empty()) {
        ImGui::TextUnformatted(run.stages[static_cast<size_t>(g.stage)].name.c_str());
        const ImGuiTextWrapScope wrap(0);
        ImGui::TextDisabled("%s", g.omitted.c_str());
        continue;
      }
      nv.nav.begin_frame();
      // The pick shows the selection; a click moves it, which selects the cell's event.
      nv.nav.picked.reset();
      if (selected)
        if (const auto c = cell_on(g, *selected)) nv.nav.picked = CellIndex{c->row, c->col};
      const std::optional<CellIndex> synced = nv.nav.picked;
      nv.view->draw(renderer, nv.nav, navigator_display_, ImVec2(ImGui::GetContentRegionAvail().x, size.y));
      if (nv.nav.picked && nv.nav.picked != synced) clicked = g.event_at(nv.nav.picked->row, nv.nav.picked->col);
      if (divergence)
        if (const auto c = cell_on(g, *divergence))
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
  // The decode overview has a row per pair (hundreds): it gets more of the height.
  const float navigator_h = pairs_grid_ ? std::clamp(rest * 0.24f, 110.0f, 220.0f) : std::clamp(rest * 0.36f, 110.0f, 320.0f);
  const float grid_h = rest - navigator_h - ImGui::GetTextLineHeightWithSpacing() - 2 * ImGui::GetStyle().ItemSpacing.y;
  if (pairs_grid_) {
    draw_pair_overview(s, renderer, ImVec2(size.x, grid_h));
    handle_heatmap_keys(pairs_nav_);
  } else {
    draw_error_grid(s, renderer, ImVec2(size.x, grid_h));
    handle_heatmap_keys(grid_nav_);
  }
  ImGui::TextDisabled("Event navigator: each event's worst error / tolerance (click one to show it)");
  draw_navigator(s, renderer, ImVec2(size.x, std::max(60.0f, size.y - (ImGui::GetCursorPosY() - start.y) - 4)));
}

}  // namespace ts
