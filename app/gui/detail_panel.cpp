#include "app/gui/detail_panel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <imgui.h>

#include "app/gui/color_bar.h"
#include "app/gui/error_injection.h"
#include "app/gui/heatmap_controls.h"
#include "app/gui/heatmap_readout.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/stepping_bar.h"
#include "app/gui/theme.h"
#include "app/gui/value_format.h"
#include "app/model/analysis/symptoms.h"
#include "app/model/viewer/cell_readout.h"
#include "app/model/viewer/stage_series.h"

namespace ts {
DetailPanel::DetailPanel(const GuiOptions& o) {
  values_display_.colormap = o.values_colormap.value_or(ColormapId::ember);
  values_display_.scale.log = o.values_scale == "log" || o.values_scale == "signed-log";
  values_display_.scale.symmetric = o.values_scale == "symmetric" || o.values_scale == "signed-log";
  values_display_.scale.log_floor = 1e-3f;
  reference_display_ = values_display_;
  diff_display_.colormap = ColormapId::diverging;
  diff_display_.scale.symmetric = true;
  diff_display_.scale.log_floor = 1e-7f;
  for (HeatmapView* v : {&trace_, &reference_, &diff_}) v->axes = numbered_axes("query row", "head-dim column");
  max_tile_ = o.max_tile;
  initial_pick_ = o.pick;
  animate_ = o.animate;
  curves_over_group = o.curves_over_group;
}

std::vector<HeatmapViewLayout> DetailPanel::layouts() const {
  if (!trace_grid_) return {};
  return {trace_.layout(), reference_.layout(), diff_.layout()};
}

std::vector<ExportableHeatmap> DetailPanel::exportables() const {
  if (!trace_grid_) return {};
  const std::string what = normalised ? "O/l" : "O";
  const HeatmapDisplay& ref_display = link_ranges_ ? values_display_ : reference_display_;
  return {exportable("detail_trace", trace_, trace_grid_, values_display_, title_ + "  trace " + what),
          exportable("detail_reference", reference_, reference_grid_, ref_display, title_ + "  reference " + what),
          exportable("detail_diff", diff_, diff_grid_, diff_display_, title_ + "  trace - reference")};
}

void DetailPanel::update(ViewerSession& s, ErrorLog& errors) {
  const std::optional<size_t> sel = s.selected();
  const RunView* run = s.has_run() ? &s.view() : nullptr;
  if (sel == shown_event_ && run == shown_run_ && normalised == shown_normalised_ &&
      curves_over_group == shown_over_group_)
    return;
  shown_event_ = sel;
  shown_run_ = run;
  shown_normalised_ = normalised;
  shown_over_group_ = curves_over_group;
  group_label_.clear();
  series_x_label_.reset();
  error_.clear();
  if (!run || !sel) {
    trace_grid_ = reference_grid_ = diff_grid_ = nullptr;
    for (HeatmapView* v : {&trace_, &reference_, &diff_}) v->set_data(nullptr);
    return;
  }
  const EventComparison* cmp = nullptr;
  const bool ok = guarded(errors, "compare the selected event", [&] { cmp = &s.comparison(); });
  if (!ok || !cmp) {
    error_ = errors.entries().empty() ? "cannot compare this event" : errors.entries().back().message;
    trace_grid_ = reference_grid_ = diff_grid_ = nullptr;
    for (HeatmapView* v : {&trace_, &reference_, &diff_}) v->set_data(nullptr);
    return;
  }
  title_ = describe_event(cmp->header, run->stages, run->attention);
  first_row_ = cmp->header.q_begin;
  rows_ = cmp->rows;
  passes_ = cmp->passes;
  worst_ratio_ = cmp->worst_ratio;
  convention_ = "stored " + convention_name(cmp->trace_convention) + "; reference " +
                convention_name(cmp->reference_normalized ? kNormalized : 0) + "; compared " +
                convention_name(cmp->compared_normalized ? kNormalized : 0) + " (m in natural log units)";
  trace_grid_ = std::make_shared<FloatGrid>(normalised ? cmp->o_norm_trace : cmp->o_trace);
  reference_grid_ = std::make_shared<FloatGrid>(normalised ? cmp->o_norm_reference : cmp->o_reference);
  diff_grid_ = std::make_shared<FloatGrid>(normalised ? cmp->o_norm_diff : cmp->o_diff);
  trace_.set_data(trace_grid_, max_tile_);
  reference_.set_data(reference_grid_, max_tile_);
  diff_.set_data(diff_grid_, max_tile_);
  for (HeatmapView* v : {&trace_, &reference_, &diff_}) v->axes.first_row = first_row_;
  if (initial_pick_ && (initial_pick_->row >= cmp->rows || initial_pick_->col >= cmp->head_dim)) {
    // Checked here: the grid is known only once the trace is open and its event shown.
    errors.report("--pick",
                  "--pick " + std::to_string(initial_pick_->row) + "," + std::to_string(initial_pick_->col) +
                      " is outside the shown event's " + std::to_string(cmp->rows) + " x " +
                      std::to_string(cmp->head_dim) + " cells: ROW 0-" + std::to_string(cmp->rows - 1) + ", COL 0-" +
                      std::to_string(cmp->head_dim - 1) + " (" + title_ + ")",
                  2);
    bad_pick_ = true;
    initial_pick_.reset();
  }
  if (initial_pick_ || pending_pick_) {
    const CellIndex want = initial_pick_ ? *initial_pick_ : *pending_pick_;
    nav_.picked = CellIndex{std::min<int64_t>(want.row, cmp->rows - 1), std::min<int64_t>(want.col, cmp->head_dim - 1)};
    initial_pick_.reset();
    pending_pick_.reset();
  } else if (!nav_.picked) {
    // Nothing picked yet: the worst cell, so the readout shows where it is wrong.
    if (const auto w = worst_cell_of(*cmp, s.report().tolerance, normalised)) nav_.picked = CellIndex{w->first, w->second};
  }
  // Ranges follow the data unless the user set them (Auto off).
  const std::array<FloatGridView, 2> values = {trace_grid_->view(), reference_grid_->view()};
  if (values_display_.auto_range) values_display_.fit(values);
  const std::array<FloatGridView, 1> ref = {reference_grid_->view()};
  if (reference_display_.auto_range) reference_display_.fit(ref);
  const std::array<FloatGridView, 1> diff = {diff_grid_->view()};
  if (diff_display_.auto_range) diff_display_.fit(diff);

  normalised_state_ = cmp->compared_normalized;
  m_trace_ = {normalised_state_ ? "trace LSE" : "trace m", cmp->m_trace};
  m_reference_ = {"reference", cmp->m_reference};
  l_trace_ = {"trace l", cmp->l_trace};
  l_reference_ = {"reference", cmp->l_reference};
  const EventHeader& h = cmp->header;
  std::vector<float> err = s.report().error_by_query(h.stage, h.batch, h.head);
  const ErrorGrid* grid = s.report().grid(h.stage, h.batch, h.head);
  error_rows_per_point_ = grid ? std::max<int64_t>(1, grid->rows_per_cell) : 1;
  error_whole_run_ = !err.empty();
  if (err.empty()) {  // the stage has no grid: this event's rows only
    for (const RowVerdict& v : cmp->row_verdicts) err.push_back(v.ratio);
    error_by_query_ = {"this event's rows", std::move(err)};
  } else {
    error_by_query_ = {cmp->stage.name + ", all queries", std::move(err)};
  }
  std::optional<StageSeries> series;
  if (auto group = group_series(s.view(), *s.run().reference, s.report(), cmp->event_index)) {
    group_label_ = group->group;
    if (curves_over_group) series = std::move(group);
  }
  if (!series) series = stage_series(s.view(), *s.run().reference, s.report(), cmp->event_index);
  if (series) {
    const std::string q = ", query " + std::to_string(series->query);
    m_trace_ = {(normalised_state_ ? "trace LSE" : "trace m") + q, std::move(series->m_trace)};
    m_reference_ = {"reference", std::move(series->m_reference)};
    l_trace_ = {"trace l" + q, std::move(series->l_trace)};
    l_reference_ = {"reference", std::move(series->l_reference)};
    error_by_query_ = {cmp->stage.name + ", each " + series->x_label, std::move(series->worst)};
    series_x_label_ = series->x_label;
    series_selected_ = series->selected;
    series_first_x_ = series->first_x;
  }
}

void DetailPanel::draw_header(ViewerSession& s) {
  (void)s;
  if (!trace_grid_) return;
  ImGui::AlignTextToFramePadding();
  const ImU32 badge = passes_ ? theme::kPass : theme::kFail;
  const std::string verdict = passes_ ? "PASS" : "FAIL";
  {
    const ImGuiStyleColorScope colour(ImGuiCol_Text, badge);
    ImGui::TextUnformatted(verdict.c_str());
  }
  ImGui::SameLine();
  ImGui::TextUnformatted(title_.c_str());
  ImGui::SameLine(0, 16);
  if (std::isinf(worst_ratio_)) ImGui::TextDisabled("worst error: NaN or infinite");
  else ImGui::TextDisabled("worst error %s x tolerance", format_short(worst_ratio_).c_str());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", convention_.c_str());
}

void DetailPanel::pick_worst_in_event(ViewerSession& s) {
  if (!s.selected()) return;
  if (const auto w = worst_cell_of(s.comparison(), s.report().tolerance, normalised)) {
    nav_.picked = CellIndex{w->first, w->second};
    nav_.request_fit();
  }
}

void DetailPanel::pick_worst_in_run(ViewerSession& s) {
  const std::optional<WorstCell>& w = s.report().worst_cell;
  if (!w || w->event_index < 0) return;
  // Its quantity decides the view: raw O or O/l; an m, LSE or l cell has no column (0 shown).
  if (w->quantity == "O") normalised = false;
  else if (w->quantity == "O/l") normalised = true;
  pending_pick_ = CellIndex{w->query - w->header.q_begin, std::max(w->column, 0)};
  if (s.selected() == static_cast<size_t>(w->event_index) && trace_grid_) {
    nav_.picked = *pending_pick_;
    pending_pick_.reset();
  } else {
    s.stepper().select(static_cast<size_t>(w->event_index));
  }
}

void DetailPanel::draw_how_much(ViewerSession& s) {
  std::optional<CellReadout>& r = readout_;
  r.reset();
  if (nav_.picked && s.selected())
    r = read_cell(s.comparison(), s.report().tolerance, nav_.picked->row, static_cast<int32_t>(nav_.picked->col),
                  normalised, *s.selected());
  ImGui::AlignTextToFramePadding();
  if (!r) {
    ImGui::TextDisabled("Pick a cell (click) for its numbers.");
    return;
  }
  const ImGuiFontScope font(gui_fonts().mono);
  const ImU32 colour = r->ratio > 1 ? theme::kFail : theme::kPass;
  {
    const ImGuiStyleColorScope c(ImGuiCol_Text, colour);
    ImGui::Text("%s x tol", std::isfinite(r->ratio) ? format_short(r->ratio).c_str() : "+Inf");
  }
  ImGui::SameLine(0, 12);
  // Short numbers; NaN and infinities spelt as everywhere else in the viewer.
  const auto num = [](double v) {
    return std::isfinite(v) ? format_short(v) : format_cell_value(static_cast<float>(v));
  };
  ImGui::Text("b%d h%d q%lld c%d  %s trace %s  ref %s  |err| %s  rel %s  allowed %s", r->batch, r->head,
              static_cast<long long>(r->query), r->column, r->quantity.c_str(), num(r->trace).c_str(),
              num(r->reference).c_str(), num(r->abs_error).c_str(), num(r->rel_error).c_str(), num(r->allowed).c_str());
  const std::string text = to_text(*r);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text.c_str());
  ImGui::SameLine(0, 12);
  const ImGuiIO& io = ImGui::GetIO();
  const bool ctrl_c = io.KeyCtrl && ImGui::IsKeyPressed('C', false) && !io.WantTextInput;
  if (ImGui::SmallButton("Copy") || ctrl_c) ImGui::SetClipboardText(text.c_str());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Copy the picked cell's numbers as text (Ctrl+C)");
}

void DetailPanel::draw_toolbar() {
  int mode = normalised ? 0 : 1;
  if (ImGui::RadioButton("O / l", &mode, 0)) normalised = true;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The attention output so far: O divided by the row's sum l");
  ImGui::SameLine();
  if (ImGui::RadioButton("raw O", &mode, 1)) normalised = false;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("O as the stage stores it (unnormalised: sum exp(s - m) v)");
  ImGui::SameLine(0, 18);
  if (ImGui::Button("Fit")) nav_.request_fit();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Whole arrays in view (F, or double-click an image)");
  ImGui::SameLine();
  if (ImGui::Checkbox("Square cells", &nav_.square_cells)) nav_.request_fit();
  ImGui::SameLine();
  if (ImGui::Checkbox("Link ranges", &link_ranges_) && !link_ranges_) reference_display_ = values_display_;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Trace and reference share one colour range, so equal values look equal");
  ImGui::SameLine(0, 18);
  worst_event_clicked_ = ImGui::Button("Worst cell");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Pick this event's cell with the largest error / tolerance (W)");
  ImGui::SameLine();
  worst_run_clicked_ = ImGui::Button("Worst in run");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Select the run's worst cell: its event, and the cell (Shift+W)");
}

void DetailPanel::draw_views(HeatmapRenderer& renderer, float view_h) {
  if (!trace_grid_) return;
  const std::array<FloatGridView, 2> values = {trace_grid_->view(), reference_grid_->view()};
  const std::array<FloatGridView, 1> ref = {reference_grid_->view()};
  const std::array<FloatGridView, 1> diffs = {diff_grid_->view()};
  const float controls_h = 2 * ImGui::GetFrameHeightWithSpacing();
  const ImGuiTableScope table("##views", 3, ImGuiTableFlags_SizingStretchSame | ImGuiTableFlags_PadOuterX);
  if (!table) return;
  const HeatmapDisplay& ref_display = link_ranges_ ? values_display_ : reference_display_;
  for (int c = 0; c < 3; ++c) {
    ImGui::TableNextColumn();
    const float width = ImGui::GetContentRegionAvail().x;
    const float y0 = ImGui::GetCursorPosY();
    const ImGuiIdScope column_id(c);
    if (c == 1) error_injection().throw_if_aimed_at("detail");  // mid-table, mid-ID-stack: the worst place
    if (c == 0) {
      draw_heatmap_controls("values", values_display_, values, width);
    } else if (c == 1) {
      if (link_ranges_) {
        ImGui::AlignTextToFramePadding();
        ImGui::TextDisabled("Colour range shared with the trace");
      } else {
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

nlohmann::json DetailPanel::curves_layout() const {
  nlohmann::json j;
  j["over_group"] = curves_over_group && series_x_label_ == "query head";
  j["group"] = group_label_;
  j["x_label"] = series_x_label_ ? nlohmann::json(*series_x_label_) : nlohmann::json(nullptr);
  j["first_x"] = series_x_label_ ? series_first_x_ : first_row_;
  j["selected"] = series_selected_;
  j["plots"] = nlohmann::json::array();
  for (const DrawnCurve& c : drawn_curves_) {
    nlohmann::json p = {{"id", c.id},
                        {"min", {c.where.min_x, c.where.min_y}},
                        {"max", {c.where.max_x, c.where.max_y}},
                        {"x_range", {c.where.frame.x0, c.where.frame.x1}},
                        {"y_range", {c.where.frame.y0, c.where.frame.y1}},
                        {"log_y", c.where.frame.log_y}};
    p["series"] = nlohmann::json::array();
    for (const CurveSeries* cs : c.series) {
      nlohmann::json y = nlohmann::json::array();
      for (float v : cs->y) y.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
      p["series"].push_back({{"name", cs->name}, {"y", std::move(y)}});
    }
    j["plots"].push_back(std::move(p));
  }
  return j;
}

void DetailPanel::draw_curves(ViewerSession& s, float height) {
  (void)s;
  drawn_curves_.clear();
  if (!trace_grid_ || height < 60) return;
  // GQA: the curves run over the event's splits (or steps) or across its kv head's query heads.
  if (!group_label_.empty() && height > 60 + ImGui::GetFrameHeightWithSpacing()) {
    const float y0 = ImGui::GetCursorPosY();
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("Curves:");
    ImGui::SameLine();
    int over = curves_over_group ? 1 : 0;
    if (ImGui::RadioButton("this head, over the keys", &over, 0)) curves_over_group = false;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("m, l and the error of this query head's events, split by split");
    ImGui::SameLine();
    const std::string across = "across its GQA group (" + group_label_ + ")";
    if (ImGui::RadioButton(across.c_str(), &over, 1)) curves_over_group = true;
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("m, l and the error of this event in each query head that shares its kv head");
    height -= ImGui::GetCursorPosY() - y0;
  }
  const ImGuiTableScope table("##curves", 3, ImGuiTableFlags_SizingStretchSame | ImGuiTableFlags_PadOuterX);
  if (!table) return;
  CurvePlotOptions rows;
  rows.first_x = static_cast<double>(first_row_);
  if (series_x_label_) {  // over the event's siblings, the selected one banded
    rows.first_x = static_cast<double>(series_first_x_);
    rows.x_label = *series_x_label_;
    const double at = static_cast<double>(series_first_x_ + static_cast<int64_t>(series_selected_));
    rows.band = {{at, at}};
  }
  const auto drawn = [&](const char* id, const CurvePlotHover& h, std::vector<const CurveSeries*> series) {
    drawn_curves_.push_back({id, h, std::move(series)});
  };
  ImGui::TableNextColumn();
  const ImU32 reference_color = (theme::kReferenceCurve & 0x00FFFFFFu) | (170u << IM_COL32_A_SHIFT);
  const PlotSeries m[] = {{&m_trace_, theme::kTraceCurve, 1.5f}, {&m_reference_, reference_color, 4.0f}};
  drawn("m",
        draw_curve_plot("m", normalised_state_ ? "LSE (natural log)" : "m (max score over its keys)", m, rows,
                        ImVec2(ImGui::GetContentRegionAvail().x, height)),
        {&m_trace_, &m_reference_});
  ImGui::TableNextColumn();
  const PlotSeries l[] = {{&l_trace_, theme::kTraceCurve, 1.5f}, {&l_reference_, reference_color, 4.0f}};
  // A normalised state keeps no sum (O is already divided by it): its l is 1 by definition.
  drawn("l",
        draw_curve_plot("l", normalised_state_ ? "l (normalised state: 1)" : "l (sum of exp(s - m) over its keys)", l,
                        rows, ImVec2(ImGui::GetContentRegionAvail().x, height)),
        {&l_trace_, &l_reference_});
  ImGui::TableNextColumn();
  CurvePlotOptions err;
  err.log_y = true;
  err.hlines = {{1.0, "tolerance"}};
  // The stage's whole grid (its rows pooled by the grid's rows_per_cell: x counts pooled rows),
  // with this event's rows as a band; or only this event's rows.
  const int64_t per = error_rows_per_point_;
  err.x_label = per > 1 ? "query index / " + std::to_string(per) + " (worst of " + std::to_string(per) + ")"
                        : "query index";
  err.first_x = error_whole_run_ ? 0.0 : static_cast<double>(first_row_);
  if (error_whole_run_)
    err.band = {{static_cast<double>(first_row_ / per), static_cast<double>((first_row_ + rows_ - 1) / per)}};
  if (series_x_label_) {
    err.x_label = rows.x_label;
    err.first_x = rows.first_x;
    err.band = rows.band;
  }
  const PlotSeries e[] = {{&error_by_query_, theme::kFail}};
  drawn("err", draw_curve_plot("err", "error / tolerance", e, err, ImVec2(ImGui::GetContentRegionAvail().x, height)),
        {&error_by_query_});
}

void DetailPanel::draw(ViewerSession& s, HeatmapRenderer& renderer, ErrorLog& errors, Playback& playback, ImVec2 size) {
  update(s, errors);
  const ImVec2 start = ImGui::GetCursorPos();
  draw_stepping_bar(s, playback, size.x);
  update(s, errors);  // the bar may have moved the selection
  if (!s.has_run()) return;
  draw_header(s);
  if (!trace_grid_) {
    ImGui::TextColored(ImVec4(0.94f, 0.35f, 0.35f, 1), "%s", error_.empty() ? "No event selected." : error_.c_str());
    return;
  }
  draw_toolbar();
  {
    const ImGuiIO& io = ImGui::GetIO();
    const bool key_w = !io.WantTextInput && !io.KeyCtrl && ImGui::IsKeyPressed('W', false);
    if (worst_run_clicked_ || (key_w && io.KeyShift)) pick_worst_in_run(s);
    update(s, errors);  // the toolbar may have switched O/l and raw O, or selected another event
    if (worst_event_clicked_ || (key_w && !io.KeyShift)) pick_worst_in_event(s);
  }
  nav_.begin_frame();
  if (animate_ && nav_.rows > 0)
    nav_.zoom((animate_frame_++ / 60) % 2 == 0 ? 0.125 : -0.125, nav_.view_w / 2, nav_.view_h / 2);

  const ImGuiStyle& style = ImGui::GetStyle();
  const float used = ImGui::GetCursorPosY() - start.y;
  const float controls_h = 2 * ImGui::GetFrameHeightWithSpacing();
  const float bar_h = ImGui::GetTextLineHeightWithSpacing() * 2 + 14;
  const float readout_h = 3 * (ImGui::GetTextLineHeight() + 2 * style.CellPadding.y) + 8 + ImGui::GetFrameHeightWithSpacing();
  const float rest = size.y - used - controls_h - bar_h - readout_h - 5 * style.ItemSpacing.y;
  // Few query rows: the views are a strip of a row or a few, the curves (over the siblings or the
  // GQA group) say more, so they take half; the curves' selector line comes on top of that.
  const float curves_h = series_x_label_ ? std::clamp(rest * 0.5f, 150.0f, 320.0f) : std::clamp(rest * 0.34f, 110.0f, 240.0f);
  const float selector_h = group_label_.empty() ? 0.0f : ImGui::GetFrameHeightWithSpacing();
  const float view_h = std::max(120.0f, rest - curves_h - selector_h);
  draw_views(renderer, view_h);
  handle_heatmap_keys(nav_);
  const std::array<const HeatmapView*, 3> views = {&trace_, &reference_, &diff_};
  draw_cell_readout(nav_, views);
  draw_how_much(s);
  ImGui::Spacing();
  draw_curves(s, std::max(0.0f, size.y - (ImGui::GetCursorPosY() - start.y) - style.ItemSpacing.y));
}

}  // namespace ts
