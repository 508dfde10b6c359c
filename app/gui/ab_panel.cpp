#include "app/gui/ab_panel.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <imgui.h>

#include "app/gui/color_bar.h"
#include "app/gui/error_injection.h"
#include "app/gui/heatmap_controls.h"
#include "app/gui/heatmap_readout.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/stepping_bar.h"
#include "app/gui/theme.h"
#include "app/gui/value_format.h"
#include "app/model/analysis/report_text.h"
#include "app/model/analysis/symptoms.h"
#include "instrumentation/trace/display_text.h"

namespace ts {
namespace {

void verdict_text(const ABReport& r) {
  const ImU32 colour = r.clean() ? theme::kPass : r.verdict == Verdict::not_compared ? theme::kWarn : theme::kFail;
  ImGui::TextColored(ImColor(colour), "%s", ab_verdict_text(r).c_str());
}

void row(const char* what, const std::string& value) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("%s", what);
  ImGui::TableNextColumn();
  ImGui::TextWrapped("%s", printable(value).c_str());  // names and notes quote the files
}

// Stepping over the events where A and B differ, in the kernel's order (D / Shift+D): the
// stepping bar's failing events and first divergence are A's against the reference, which say
// nothing of B (A may be the clean run).
void draw_difference_bar(ViewerSession& s) {
  const ImGuiIdScope id("differences");
  const std::vector<int64_t>& events = s.ab_report().differing_events_a;
  {
    const ImGuiDisabledScope disabled(events.empty());
    if (ImGui::Button("First difference")) s.to_first_ab_difference();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("The first event, in the kernel's order, where A and B differ");
    ImGui::SameLine(0, 4);
    if (ImGui::Button("< Previous difference")) s.step_ab_difference(-1);
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("The previous event in the kernel's order where A and B differ (Shift+D)");
    ImGui::SameLine(0, 4);
    if (ImGui::Button("Next difference >")) s.step_ab_difference(1);
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("The next event in the kernel's order where A and B differ (D)");
  }
  ImGui::SameLine(0, 12);
  const auto at = s.selected() ? std::find(events.begin(), events.end(), static_cast<int64_t>(*s.selected())) : events.end();
  if (events.empty()) ImGui::TextDisabled("A and B differ in no event");
  else if (at != events.end())
    ImGui::TextColored(ImColor(theme::kFail), "difference %zu of %zu", static_cast<size_t>(at - events.begin()) + 1,
                       events.size());
  else ImGui::TextDisabled("A and B agree here (%zu events differ)", events.size());
}

}  // namespace

std::vector<HeatmapViewLayout> ABPanel::layouts() const {
  if (!a_grid_) return {};
  return {a_.layout(), b_.layout(), diff_.layout()};
}

std::vector<ExportableHeatmap> ABPanel::exportables() const {
  if (!a_grid_) return {};
  return {exportable("ab_a", a_, a_grid_, values_display_, "A  " + what_),
          exportable("ab_b", b_, b_grid_, values_display_, "B  " + what_),
          exportable("ab_diff", diff_, diff_grid_, diff_display_, "A - B  " + what_)};
}

void ABPanel::update(ViewerSession& s, ErrorLog& errors) {
  const RunView* a = s.has_run() ? &s.view() : nullptr;
  const RunView* b = s.has_b() ? s.b().run.get() : nullptr;
  if (a == shown_a_ && b == shown_b_ && s.selected() == shown_event_ && normalised == shown_normalised_) return;
  shown_a_ = a;
  shown_b_ = b;
  shown_event_ = s.selected();
  shown_normalised_ = normalised;
  a_grid_ = b_grid_ = diff_grid_ = nullptr;
  for (HeatmapView* v : {&a_, &b_, &diff_}) v->set_data(nullptr);
  if (!a || !b) return;
  // Runs on other inputs are not compared: their A - B would be the inputs' difference.
  if (!s.ab_report().inputs_identical) return;
  guarded(errors, "A/B arrays", [&] {
    ABArrays arr = s.ab_arrays(normalised);
    what_ = arr.what;
    a_grid_ = std::make_shared<FloatGrid>(std::move(arr.a));
    b_grid_ = std::make_shared<FloatGrid>(std::move(arr.b));
    diff_grid_ = std::make_shared<FloatGrid>(std::move(arr.diff));
    a_.set_data(a_grid_);
    b_.set_data(b_grid_);
    diff_.set_data(diff_grid_);
    for (HeatmapView* v : {&a_, &b_, &diff_}) v->axes = numbered_axes("query row", "head-dim column", arr.first_row);
    // A pick outside the new arrays (or none yet): where A and B differ most.
    if (!nav_.picked || nav_.picked->row >= diff_grid_->rows || nav_.picked->col >= diff_grid_->cols)
      nav_.picked = worst_cell(*diff_grid_);
    const std::array<FloatGridView, 2> values = {a_grid_->view(), b_grid_->view()};
    if (values_display_.auto_range) values_display_.fit(values);
    diff_display_.colormap = ColormapId::diverging;
    diff_display_.scale.symmetric = true;
    const std::array<FloatGridView, 1> diff = {diff_grid_->view()};
    if (diff_display_.auto_range) diff_display_.fit(diff);
  });
}

void ABPanel::draw_report(ViewerSession& s) {
  const ABReport& r = s.ab_report();
  {
    const ImGuiFontScope font(gui_fonts().large);
    verdict_text(r);
    ImGui::SameLine();
    ImGui::TextWrapped("%s", r.symptom.line.c_str());
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;
  if (const ImGuiTableScope table("##ab", 2, flags); table) {
    ImGui::TableSetupColumn("what", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("first difference").x + 12);
    ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthStretch);
    row("A", s.run().display_name() + "   " + run_line(r.a) + "   " + s.run().backend_and_seed_text());
    row("B", s.b().display_name() + "   " + run_line(r.b) + "   " + s.b().backend_and_seed_text());
    row("A vs reference", std::string(to_string(r.a.verdict)) + ": " + r.a.symptom.line);
    row("B vs reference", std::string(to_string(r.b.verdict)) + ": " + r.b.symptom.line);
    row("inputs", r.inputs_identical ? "identical" : "DIFFERENT: " + r.inputs_note);
    if (!r.inputs_identical)
      row("compared", "nothing: the runs' inputs differ");
    else
      row("compared", r.compared_at + ": " + std::to_string(r.compared) + (r.tilings_match ? " events" : " rows") + ", " +
                          std::to_string(r.differing) + " differ" +
                          (r.only_in_one ? ", " + std::to_string(r.only_in_one) + " in one run only" : std::string()) +
                          "; max |O/l A - B| " + format_short(r.max_o_norm_diff) + ", max |m A - B| " +
                          format_short(r.max_m_diff));
    if (r.first_difference) {
      const ABDifference& d = *r.first_difference;
      std::string rows;
      for (size_t i = 0; i < d.query_rows.size() && i < 8; ++i) rows += (i ? ", " : "") + std::to_string(d.query_rows[i]);
      if (d.query_rows.size() > 8) rows += ", ... (" + std::to_string(d.query_rows.size()) + " rows)";
      row("first difference", describe_event(d.where, r.a.stage_table, r.a.attention) + "; query rows " + rows);
    }
  }
}

void ABPanel::draw(ViewerSession& s, HeatmapRenderer& renderer, ErrorLog& errors, const ABPanelActions& act,
                   ImVec2 size) {
  const ImVec2 start = ImGui::GetCursorPos();
  if (!s.has_run()) {
    ImGui::TextDisabled("Open a run first (File > Open), then compare it with another.");
    return;
  }
  if (ImGui::Button("Compare with...") && act.open_b) act.open_b();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Open a second trace as B (same problem: sizes, inputs)");
  ImGui::SameLine();
  // Only a run of our kernels can be launched again (a user's trace holds no config).
  const bool can_rerun = s.run().spec || s.view().config;
  if (!can_rerun) ImGui::BeginDisabled();
  if (ImGui::Button("Re-run A on the other backend") && act.rerun_other) act.rerun_other();
  if (!can_rerun) ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(can_rerun ? "Run A's config again on the GPU (or the CPU) and compare the two"
                                : "A was not recorded by tilescope's kernels: there is no config to launch again");
  if (s.has_b()) {
    ImGui::SameLine();
    if (ImGui::Button("Swap A and B") && act.swap) act.swap();
    ImGui::SameLine();
    if (ImGui::Button("Close B")) s.clear_b();
  }
  update(s, errors);
  if (!s.has_b()) {
    ImGui::Spacing();
    ImGui::TextDisabled("No run B. Compare A with another trace, or re-run it on the other backend.");
    return;
  }
  draw_report(s);
  ImGui::Spacing();
  if (!s.ab_report().inputs_identical) {
    // A | B | A - B of runs on other inputs would show the inputs' difference as the kernels'.
    ImGui::TextDisabled("A and B are not shown side by side: they ran on different inputs.");
    return;
  }
  draw_difference_bar(s);
  if (const ImGuiIO& io = ImGui::GetIO(); !io.WantTextInput && !io.KeyCtrl && ImGui::IsKeyPressed('D', false))
    s.step_ab_difference(io.KeyShift ? -1 : 1);
  // Stepping, when both runs have the same events to step through (compared event by event).
  if (act.playback && s.ab_report().tilings_match) {
    draw_stepping_bar(s, *act.playback, size.x);
    update(s, errors);
  }
  int mode = normalised ? 0 : 1;
  if (ImGui::RadioButton("O / l", &mode, 0)) normalised = true;
  ImGui::SameLine();
  if (ImGui::RadioButton("raw O", &mode, 1)) normalised = false;
  ImGui::SameLine(0, 18);
  if (ImGui::Button("Fit")) nav_.request_fit();
  ImGui::SameLine(0, 18);
  ImGui::TextUnformatted(what_.c_str());
  update(s, errors);
  if (!a_grid_) return;

  nav_.begin_frame();
  const ImGuiStyle& style = ImGui::GetStyle();
  const float controls_h = 2 * ImGui::GetFrameHeightWithSpacing();
  const float bar_h = ImGui::GetTextLineHeightWithSpacing() * 2 + 14;
  const float readout_h = 3 * (ImGui::GetTextLineHeight() + 2 * style.CellPadding.y) + 8;
  const float view_h =
      std::max(120.0f, size.y - (ImGui::GetCursorPosY() - start.y) - controls_h - bar_h - readout_h - 4 * style.ItemSpacing.y);
  const std::array<FloatGridView, 2> values = {a_grid_->view(), b_grid_->view()};
  const std::array<FloatGridView, 1> diffs = {diff_grid_->view()};
  if (const ImGuiTableScope table("##abviews", 3, ImGuiTableFlags_SizingStretchSame | ImGuiTableFlags_PadOuterX); table) {
    for (int c = 0; c < 3; ++c) {
      ImGui::TableNextColumn();
      const float width = ImGui::GetContentRegionAvail().x;
      const float y0 = ImGui::GetCursorPosY();
      const ImGuiIdScope id(c);
      if (c == 1) error_injection().throw_if_aimed_at("ab");  // mid-table, mid-ID-stack
      if (c == 0) draw_heatmap_controls("values", values_display_, values, width);
      else if (c == 2) draw_heatmap_controls("diff", diff_display_, diffs, width);
      else {
        ImGui::AlignTextToFramePadding();
        ImGui::TextDisabled("Colour range shared with A");
      }
      ImGui::SetCursorPosY(std::max(ImGui::GetCursorPosY(), y0 + controls_h));
      HeatmapView& view = c == 0 ? a_ : c == 1 ? b_ : diff_;
      const HeatmapDisplay& display = c == 2 ? diff_display_ : values_display_;
      view.draw(renderer, nav_, display, ImVec2(width, view_h));
      ImGui::Spacing();
      const float indent = view.layout().image_min_x - ImGui::GetCursorScreenPos().x;
      ImGui::SetCursorPosX(ImGui::GetCursorPosX() + indent);
      draw_color_bar(renderer.colormaps(), display, view.stats(), width - indent - 4);
    }
  }
  handle_heatmap_keys(nav_);
  const std::array<const HeatmapView*, 3> views = {&a_, &b_, &diff_};
  draw_cell_readout(nav_, views);
}

}  // namespace ts
