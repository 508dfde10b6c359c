#include "app/gui/timeline_panel.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "app/gui/error_injection.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "app/gui/value_format.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/colormap.h"

namespace ts {
namespace {

ImU32 to_imgui(Rgba8 c) { return IM_COL32(c.r, c.g, c.b, c.a); }

// Splits get the hues of a wheel, far apart for neighbours (golden-angle steps).
ImU32 split_colour(int32_t split) {
  if (split < 0) return IM_COL32(150, 154, 162, 255);
  const float h = std::fmod(static_cast<float>(split) * 0.381966f, 1.0f);
  float r, g, b;
  ImGui::ColorConvertHSVtoRGB(h, 0.55f, 0.9f, r, g, b);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 1.0f));
}

// The box colour for the error / tolerance of an event: the one fixed scale (colormap.h).
ImU32 ratio_colour(const AnalysisReport& report, size_t event) {
  static const ColorMapper mapper(kToleranceColormap, tolerance_scale());
  if (event >= report.events.size() || !report.events[event].compared) return IM_COL32(110, 110, 110, 255);
  const EventResult& r = report.events[event];
  if (r.nan > 0) return to_imgui(special_color(CellClass::nan));
  return to_imgui(mapper(r.worst_ratio));
}

}  // namespace

void TimelinePanel::update(const ViewerSession& s) {
  const RunView* run = s.has_run() ? &s.view() : nullptr;
  if (run == shown_run_) return;
  shown_run_ = run;
  timeline_ = run ? build_timeline(*run) : Timeline{};
  axis_ = timeline_axis(timeline_, collapse_gaps);
  axis_collapsed_ = collapse_gaps;
  view_begin_ = 0;
  view_end_ = std::max(1.0, axis_.length);
}

void TimelinePanel::zoom_to(const TimelineSpan& span) {
  // From the earliest box of the span (a block's previous event) to its last event, with a margin.
  int64_t begin = span.first_ns;
  for (const TimelineBox& b : timeline_.boxes) {
    const EventHeader& h = shown_run_->headers[b.event];
    if (h.stage == span.stage && (span.split < 0 || h.split == span.split)) begin = std::min(begin, b.start_ns);
  }
  const double a = axis_.to_axis(static_cast<double>(begin)), b = axis_.to_axis(static_cast<double>(span.last_ns));
  const double width = std::max(100.0, b - a);
  view_begin_ = a - 0.05 * width;
  view_end_ = b + 0.05 * width;
}

void TimelinePanel::draw_durations(const ViewerSession& s, float width) {
  const RunView& run = s.view();
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersOuter | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit |
                                ImGuiTableFlags_ScrollY;
  const float rows = static_cast<float>(timeline_.stages.size() + timeline_.splits.size()) + 1.5f;
  const float h = std::min(rows * ImGui::GetTextLineHeightWithSpacing() + 8, 9 * ImGui::GetTextLineHeightWithSpacing());
  const ImGuiTableScope table("##durations", 6, flags, ImVec2(width, h));
  if (!table) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (const char* c : {"stage / split", "events", "first -> last event", "busy (between a block's events)", "waits after", ""})
    ImGui::TableSetupColumn(c);
  ImGui::TableHeadersRow();
  int64_t previous_pass_end = -1;
  int32_t previous_pass = -1;
  for (const TimelineSpan& st : timeline_.stages) {
    const StageInfo& info = run.stages[static_cast<size_t>(st.stage)];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (ImGui::Selectable(info.name.c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) zoom_to(st);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Click: zoom the lanes to this stage");
    ImGui::TableNextColumn();
    ImGui::Text("%zu", st.events);
    ImGui::TableNextColumn();
    ImGui::Text("%s  (%s - %s)", format_duration_ns(st.span_ns()).c_str(), format_duration_ns(st.first_ns).c_str(),
                format_duration_ns(st.last_ns).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration_ns(st.busy_ns).c_str());
    ImGui::TableNextColumn();
    // A later pass reads what an earlier one wrote: how long after its last event this one starts.
    if (previous_pass >= 0 && info.pass > previous_pass) {
      ImGui::TextUnformatted(format_duration_ns(st.first_ns - previous_pass_end).c_str());
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("From the previous pass's last event to this stage's first: the launch gap plus the "
                          "first step's work");
    } else {
      ImGui::TextDisabled("-");
    }
    ImGui::TableNextColumn();
    const int32_t straggler = straggler_split(timeline_, st.stage);
    if (straggler >= 0) ImGui::TextDisabled("straggler: split %d", straggler);
    if (info.pass >= previous_pass) {
      previous_pass = info.pass;
      previous_pass_end = std::max(previous_pass_end, st.last_ns);
    }
    for (const TimelineSpan& sp : timeline_.splits) {
      if (sp.stage != st.stage) continue;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const float sw = ImGui::GetTextLineHeight() - 4;
      ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x + 12, p.y + 2), ImVec2(p.x + 12 + sw, p.y + 2 + sw),
                                                split_colour(sp.split));
      ImGui::SetCursorScreenPos(ImVec2(p.x + 16 + sw, p.y));
      const std::string label = "split " + std::to_string(sp.split) + "##" + std::to_string(sp.stage);
      if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) zoom_to(sp);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Click: zoom the lanes to this split");
      ImGui::TableNextColumn();
      ImGui::Text("%zu", sp.events);
      ImGui::TableNextColumn();
      ImGui::Text("%s  (%s - %s)", format_duration_ns(sp.span_ns()).c_str(), format_duration_ns(sp.first_ns).c_str(),
                  format_duration_ns(sp.last_ns).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration_ns(sp.busy_ns).c_str());
      ImGui::TableNextColumn();
      ImGui::TableNextColumn();
      if (sp.split == straggler) ImGui::TextColored(ImVec4(0.94f, 0.75f, 0.31f, 1), "last to finish");
    }
  }
}

void TimelinePanel::draw_lanes(ViewerSession& s, ImVec2 size) {
  const RunView& run = s.view();
  const AnalysisReport& report = s.report();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float label_w = ImGui::CalcTextSize(timeline_.gpu ? "SM 000" : "worker 00").x + 10;
  const float axis_h = ImGui::GetTextLineHeightWithSpacing() + 4;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float plot_x0 = origin.x + label_w, plot_w = std::max(50.0f, size.x - label_w - 8);
  const float plot_y0 = origin.y, plot_h = std::max(40.0f, size.y - axis_h);
  const size_t lanes = timeline_.lanes.size();
  plot_[0] = plot_x0, plot_[1] = plot_y0, plot_[2] = plot_w, plot_[3] = plot_h;
  const float lane_h = plot_h / static_cast<float>(std::max<size_t>(lanes, 1));
  ImGui::InvisibleButton("##lanes", ImVec2(size.x, plot_h + axis_h), ImGuiButtonFlags_MouseButtonLeft);
  const bool hovered = ImGui::IsItemHovered();
  const ImGuiIO& io = ImGui::GetIO();

  // Zoom (wheel, around the cursor), pan (drag), fit (double-click).
  double span = std::max(1.0, view_end_ - view_begin_);
  if (hovered && io.MouseWheel != 0) {
    const double at = view_begin_ + (io.MousePos.x - plot_x0) / plot_w * span;
    const double k = std::pow(0.8, static_cast<double>(io.MouseWheel));
    const double new_span = std::clamp(span * k, 100.0, std::max(100.0, 1.2 * axis_.length));
    view_begin_ = at - (at - view_begin_) * new_span / span;
    view_end_ = view_begin_ + new_span;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    const double dt = -static_cast<double>(io.MouseDelta.x) / plot_w * span;
    view_begin_ += dt, view_end_ += dt;
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    view_begin_ = 0;
    view_end_ = std::max(1.0, axis_.length);
  }
  span = std::max(1.0, view_end_ - view_begin_);
  const auto x_of_axis = [&](double a) { return plot_x0 + static_cast<float>((a - view_begin_) / span * plot_w); };
  const auto x_of = [&](double ns) { return x_of_axis(axis_.to_axis(ns)); };

  dl->AddRectFilled(ImVec2(plot_x0, plot_y0), ImVec2(plot_x0 + plot_w, plot_y0 + plot_h), theme::kImageBackground);
  dl->PushClipRect(ImVec2(origin.x, plot_y0), ImVec2(plot_x0 + plot_w, plot_y0 + plot_h), true);
  // Idle gaps drawn narrow: a hatched band with the time they stand for.
  for (const TimelineAxis::Cut& c : axis_.cuts) {
    const float x0 = x_of(static_cast<double>(c.begin_ns)), x1 = x_of(static_cast<double>(c.end_ns));
    if (x1 < plot_x0 || x0 > plot_x0 + plot_w) continue;
    dl->AddRectFilled(ImVec2(x0, plot_y0), ImVec2(x1, plot_y0 + plot_h), IM_COL32(40, 42, 48, 255));
    for (float y = plot_y0; y < plot_y0 + plot_h; y += 8)
      dl->AddLine(ImVec2(x0, y), ImVec2(x1, y + (x1 - x0) * 0.5f), IM_COL32(70, 72, 80, 255));
    const std::string idle = "idle " + format_duration_ns(c.end_ns - c.begin_ns);
    const ImVec2 ts = ImGui::CalcTextSize(idle.c_str());
    const float cx = (x0 + x1) / 2, cy = plot_y0 + plot_h / 2;
    dl->AddRectFilled(ImVec2(cx - ts.x / 2 - 3, cy - ts.y / 2 - 2), ImVec2(cx + ts.x / 2 + 3, cy + ts.y / 2 + 2),
                      IM_COL32(24, 25, 28, 230));
    dl->AddText(ImVec2(cx - ts.x / 2, cy - ts.y / 2), theme::kDimText, idle.c_str());
  }
  // Lane labels where they fit (every k-th lane otherwise).
  const float text_h = ImGui::GetTextLineHeight();
  const size_t label_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(text_h / std::max(1.0f, lane_h))));
  for (size_t l = 0; l < lanes; l += label_every) {
    const int32_t where = timeline_.lanes[l];
    const std::string name = where < 0 ? "?" : (timeline_.gpu ? "SM " : "worker ") + std::to_string(where);
    const float y = plot_y0 + lane_h * static_cast<float>(l) + std::max(0.0f, (lane_h - text_h) / 2);
    dl->AddText(ImVec2(origin.x + 2, y), theme::kDimText, name.c_str());
  }
  // Boxes: at least a pixel wide, so that a block's first event (a tick) shows.
  const std::optional<size_t> selected = s.selected();
  const float gap = lane_h > 4 ? 1.0f : 0.0f;
  std::optional<size_t> hovered_event;
  ImVec2 selected_min, selected_max;
  bool selected_shown = false;
  for (const TimelineBox& b : timeline_.boxes) {
    float x0 = x_of(static_cast<double>(b.start_ns)), x1 = x_of(static_cast<double>(b.end_ns));
    if (x1 < plot_x0 - 2 || x0 > plot_x0 + plot_w + 2) continue;
    x1 = std::max(x1, x0 + 1.5f);
    const float y0 = plot_y0 + lane_h * static_cast<float>(b.lane), y1 = y0 + lane_h - gap;
    const ImU32 colour = colour_by_split ? split_colour(run.headers[b.event].split) : ratio_colour(report, b.event);
    dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), colour);
    if (lane_h > 6 && x1 - x0 > 4) dl->AddRect(ImVec2(x0, y0), ImVec2(x1, y1), IM_COL32(0, 0, 0, 120));
    if (hovered && io.MousePos.y >= y0 && io.MousePos.y < y0 + lane_h && io.MousePos.x >= x0 - 1 && io.MousePos.x < x1 + 1)
      hovered_event = b.event;
    if (selected && *selected == b.event) selected_min = ImVec2(x0, y0), selected_max = ImVec2(x1, y1), selected_shown = true;
  }
  if (selected_shown) {
    dl->AddRect(ImVec2(selected_min.x - 2, selected_min.y - 2), ImVec2(selected_max.x + 2, selected_max.y + 2),
                theme::kSelectionMark, 0, 0, 2.0f);
  }
  dl->PopClipRect();
  dl->AddRect(ImVec2(plot_x0 - 1, plot_y0 - 1), ImVec2(plot_x0 + plot_w + 1, plot_y0 + plot_h + 1), theme::kFrame);

  // Time axis: about one tick per 120 px, at round steps of 1, 2 or 5.
  const double raw_step = span / std::max(1.0, static_cast<double>(plot_w) / 120.0);
  const double decade = std::pow(10.0, std::floor(std::log10(raw_step)));
  const double step = raw_step / decade < 2 ? 2 * decade : raw_step / decade < 5 ? 5 * decade : 10 * decade;
  // Ticks at round axis positions, labelled with the time they stand for (after a cut gap the
  // two differ); none inside a gap.
  for (double a = std::ceil(view_begin_ / step) * step; a <= view_end_; a += step) {
    const double t = axis_.to_ns(a);
    const bool in_gap = std::any_of(axis_.cuts.begin(), axis_.cuts.end(), [&](const TimelineAxis::Cut& c) {
      return t > static_cast<double>(c.begin_ns) && t < static_cast<double>(c.end_ns);
    });
    if (in_gap) continue;
    const float x = x_of_axis(a);
    dl->AddLine(ImVec2(x, plot_y0 + plot_h), ImVec2(x, plot_y0 + plot_h + 4), theme::kTick);
    const std::string label = format_duration_ns(static_cast<int64_t>(std::llround(t)));
    const float w = ImGui::CalcTextSize(label.c_str()).x;
    dl->AddText(ImVec2(std::clamp(x - w / 2, plot_x0, plot_x0 + plot_w - w), plot_y0 + plot_h + 4), theme::kDimText,
                label.c_str());
  }

  if (hovered_event) {
    const size_t e = *hovered_event;
    const EventHeader& h = run.headers[e];
    const auto box = std::find_if(timeline_.boxes.begin(), timeline_.boxes.end(),
                                  [&](const TimelineBox& b) { return b.event == e; });
    std::string ratio = "not compared";
    if (e < report.events.size() && report.events[e].compared)
      ratio = report.events[e].nan ? "NaN" : format_short(report.events[e].worst_ratio) + " x tolerance";
    const ImGuiTooltipScope tip;
    ImGui::Text("event %zu: %s", e, describe_event(h, run.stages, run.attention).c_str());
    ImGui::Text("worst error: %s", ratio.c_str());
    ImGui::Text("%s %d, block %d; written at %s", timeline_.gpu ? "SM" : "worker", h.where, h.block,
                format_duration_ns(box->end_ns).c_str());
    if (box->end_ns > box->start_ns) ImGui::Text("since its block's previous event: %s", format_duration_ns(box->end_ns - box->start_ns).c_str());
    else ImGui::TextDisabled("its block's first event (the block's start is not recorded)");
    ImGui::TextDisabled("click to select it");
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Left) && io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Left] < 9.0f)
      s.stepper().select(e);
  }
}

nlohmann::json TimelinePanel::layout() const {
  nlohmann::json j;
  j["lanes"] = timeline_.lanes;
  j["boxes"] = timeline_.boxes.size();
  j["untimed_events"] = timeline_.untimed_events;
  j["gpu"] = timeline_.gpu;
  j["clock"] = timeline_.clock;
  j["end_ns"] = timeline_.end_ns;
  j["plot"] = {plot_[0], plot_[1], plot_[2], plot_[3]};
  j["view_axis"] = {view_begin_, view_end_};
  j["idle_gaps"] = axis_.cuts.size();
  return j;
}

void TimelinePanel::draw(ViewerSession& s, ImVec2 size) {
  update(s);
  if (!s.has_run()) return;
  const ImVec2 start = ImGui::GetCursorPos();
  error_injection().throw_if_aimed_at("timeline");
  if (timeline_.empty()) {
    ImGui::TextWrapped("This trace records no times (%zu events without a clock reading): nothing to draw.",
                       timeline_.untimed_events);
    return;
  }
  ImGui::AlignTextToFramePadding();
  const bool one_lane = timeline_.lanes.size() == 1;
  ImGui::Text("%zu events on %zu %s over %s", timeline_.boxes.size(), timeline_.lanes.size(),
              timeline_.gpu ? (one_lane ? "SM" : "SMs") : (one_lane ? "worker" : "workers"),
              format_duration_ns(timeline_.end_ns).c_str());
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Clock: %s%s. Each box runs from its block's previous event to the event.%s", timeline_.clock.c_str(),
                      timeline_.gpu ? " (nanoseconds, shared by the SMs)"
                                    : " (the host's, read by each worker thread as it writes; the CPU "
                                      "backend runs blocks on a few threads, so times show its schedule, "
                                      "not a GPU's)",
                      timeline_.untimed_events ? " Events without a time, or with a reading far from the run's "
                                                 "others (a damaged file), are left out." : "");
  ImGui::SameLine(0, 20);
  int mode = colour_by_split ? 1 : 0;
  if (ImGui::RadioButton("error / tolerance", &mode, 0)) colour_by_split = false;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The fixed tolerance scale: blue within it, red to yellow over it");
  ImGui::SameLine();
  if (ImGui::RadioButton("split", &mode, 1)) colour_by_split = true;
  ImGui::SameLine(0, 20);
  ImGui::Checkbox("Collapse idle gaps", &collapse_gaps);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Spans with no event open (launch gaps between passes) drawn narrow, their length written on them");
  if (collapse_gaps != axis_collapsed_) {
    axis_ = timeline_axis(timeline_, collapse_gaps);
    axis_collapsed_ = collapse_gaps;
    view_begin_ = 0;
    view_end_ = std::max(1.0, axis_.length);
  }
  ImGui::SameLine(0, 20);
  ImGui::TextDisabled("wheel: zoom   drag: pan   double-click: fit   click: select");
  draw_durations(s, size.x);
  ImGui::Spacing();
  const float used = ImGui::GetCursorPosY() - start.y;
  draw_lanes(s, ImVec2(size.x, std::max(80.0f, size.y - used - 4)));
}

}  // namespace ts
