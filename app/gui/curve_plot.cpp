#include "app/gui/curve_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"
#include "app/gui/value_format.h"
#include "app/model/colormap.h"

namespace ts {
namespace {

ImU32 special(CellClass k) {
  const Rgba8 c = special_color(k);
  return IM_COL32(c.r, c.g, c.b, 255);
}

// A dashed horizontal line.
void dashed(ImDrawList* dl, float x0, float x1, float y, ImU32 color) {
  for (float x = x0; x < x1; x += 8) dl->AddLine(ImVec2(x, y), ImVec2(std::min(x + 4, x1), y), color);
}

}  // namespace

CurvePlotHover draw_curve_plot(const char* id, const std::string& title, std::span<const PlotSeries> series,
                               const CurvePlotOptions& opt, ImVec2 size) {
  CurvePlotHover hover;
  const ImGuiIdScope scope(id);
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();

  std::vector<CurveSeries> data;
  size_t n = 0;
  for (const PlotSeries& s : series)
    if (s.data) data.push_back(*s.data), n = std::max(n, s.data->y.size());
  std::vector<double> extra;
  for (const auto& [y, label] : opt.hlines) extra.push_back(y);
  const CurveFrame frame = fit_curve_frame(data, opt.first_x, opt.log_y, extra);

  // Margins: title and legend above, y labels left, x labels and name below.
  const std::vector<double> yt = curve_ticks(frame.y0, frame.y1, frame.log_y, std::max(2, static_cast<int>(size.y / 38)));
  float label_w = 0;
  for (double t : yt) label_w = std::max(label_w, ImGui::CalcTextSize(format_tick(t).c_str()).x);
  // Title on the left, legend on the right; when both do not fit on one line the legend takes
  // a line of its own under the title (inside the plot it would hide the curve or the
  // tolerance label).
  const float right = std::floor(p0.x + size.x - 6);
  float legend_w = 0;
  for (const PlotSeries& s : series)
    if (s.data) legend_w += 14 + 6 + ImGui::CalcTextSize(s.data->name.c_str()).x + 12;
  const bool own_line = p0.x + ImGui::CalcTextSize(title.c_str()).x + 16 + legend_w > right;
  const float header_h = own_line ? 2 * line + 8 : line + 6;
  const ImVec2 a(std::floor(p0.x + label_w + 10), std::floor(p0.y + header_h));
  const ImVec2 b(right, std::floor(p0.y + size.y - 2 * line - 6));
  const float w = std::max(8.0f, b.x - a.x), h = std::max(8.0f, b.y - a.y);
  hover.min_x = a.x, hover.min_y = a.y, hover.max_x = a.x + w, hover.max_y = a.y + h;
  hover.frame = frame;
  auto px = [&](double x) { return a.x + static_cast<float>(frame.fx(x)) * w; };
  auto py = [&](double y) {
    if (frame.log_y && !(y > 0)) return b.y;
    return b.y - static_cast<float>(std::clamp(frame.fy(y), -0.02, 1.02)) * h;
  };

  dl->AddText(p0, ImGui::GetColorU32(ImGuiCol_Text), title.c_str());
  const float legend_y = own_line ? p0.y + line + 2 : p0.y;
  float lx = std::max(p0.x, b.x - legend_w);
  auto draw_legend = [&] {
    for (const PlotSeries& s : series) {
      if (!s.data) continue;
      dl->AddLine(ImVec2(lx, legend_y + line / 2), ImVec2(lx + 14, legend_y + line / 2), s.color, std::max(2.0f, s.thickness));
      lx += 20;
      dl->AddText(ImVec2(lx, legend_y), theme::kDimText, s.data->name.c_str());
      lx += ImGui::CalcTextSize(s.data->name.c_str()).x + 12;
    }
  };

  dl->AddRectFilled(a, ImVec2(a.x + w, a.y + h), theme::kImageBackground);
  // Grid and y labels.
  for (double t : yt) {
    const float y = py(t);
    dl->AddLine(ImVec2(a.x, y), ImVec2(a.x + w, y), IM_COL32(255, 255, 255, 18));
    const std::string s = format_tick(t);
    dl->AddText(ImVec2(a.x - 6 - ImGui::CalcTextSize(s.c_str()).x, y - line / 2), ImGui::GetColorU32(ImGuiCol_Text),
                s.c_str());
  }
  // x labels: whole numbers only (rows).
  const double span = frame.x1 - frame.x0;
  const int max_x_ticks = std::max(2, static_cast<int>(w / 70));
  for (double t : curve_ticks(frame.x0, frame.x1, false, max_x_ticks)) {
    if (t != std::floor(t) && span >= 2) continue;
    const float x = px(t);
    dl->AddLine(ImVec2(x, a.y + h), ImVec2(x, a.y + h + 4), theme::kTick);
    const std::string s = format_tick(t);
    dl->AddText(ImVec2(x - ImGui::CalcTextSize(s.c_str()).x / 2, a.y + h + 5), ImGui::GetColorU32(ImGuiCol_Text),
                s.c_str());
  }
  const float xw = ImGui::CalcTextSize(opt.x_label.c_str()).x;
  dl->AddText(ImVec2(a.x + (w - xw) / 2, a.y + h + 5 + line), theme::kDimText, opt.x_label.c_str());

  {
    const ImDrawListClipScope clip(dl, a, ImVec2(a.x + w, a.y + h));
    if (opt.band) {
      const float x0 = px(opt.band->first - 0.5), x1 = px(opt.band->second + 0.5);
      dl->AddRectFilled(ImVec2(std::max(a.x, x0), a.y), ImVec2(std::min(a.x + w, x1), a.y + h), IM_COL32(90, 160, 255, 40));
    }
    for (const auto& [y, label] : opt.hlines) {
      if (!frame.plottable(y)) continue;
      const float yy = py(y);
      dashed(dl, a.x, a.x + w, yy, IM_COL32(240, 190, 80, 200));
      dl->AddText(ImVec2(a.x + 4, yy - line - 1), IM_COL32(240, 190, 80, 220), label.c_str());
    }
    // Series, last first: a polyline per run of plottable points; min/max per pixel column when
    // dense.
    for (auto it = series.rbegin(); it != series.rend(); ++it) {
      const PlotSeries& s = *it;
      if (!s.data || s.data->y.empty()) continue;
      const std::vector<float>& ys = s.data->y;
      const bool dense = static_cast<float>(ys.size()) > w * 1.5f;
      std::vector<ImVec2> pts;
      auto flush = [&] {
        if (pts.size() == 1) dl->AddCircleFilled(pts[0], 2.0f, s.color);
        else if (pts.size() > 1) dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), s.color, 0, s.thickness);
        pts.clear();
      };
      auto usable = [](float y) { return std::isfinite(y); };
      if (!dense) {
        for (size_t i = 0; i < ys.size(); ++i) {
          if (!usable(ys[i])) {
            flush();
            continue;
          }
          pts.emplace_back(px(opt.first_x + static_cast<double>(i)), py(ys[i]));
        }
      } else {
        const int cols = static_cast<int>(w);
        for (int c = 0; c < cols; ++c) {
          const size_t i0 = static_cast<size_t>(static_cast<double>(c) / cols * static_cast<double>(ys.size()));
          const size_t i1 = std::max(i0 + 1, static_cast<size_t>(static_cast<double>(c + 1) / cols * static_cast<double>(ys.size())));
          float lo = INFINITY, hi = -INFINITY;
          for (size_t i = i0; i < i1 && i < ys.size(); ++i)
            if (usable(ys[i])) lo = std::min(lo, ys[i]), hi = std::max(hi, ys[i]);
          if (!(lo <= hi)) {
            flush();
            continue;
          }
          const float x = a.x + static_cast<float>(c) + 0.5f;
          pts.emplace_back(x, py(lo));
          if (hi != lo) pts.emplace_back(x, py(hi));
        }
      }
      flush();
      // Non-finite points: marks on the edges in the special colours.
      for (size_t i = 0; i < ys.size(); ++i) {
        const float y = ys[i];
        if (std::isfinite(y)) continue;
        const float x = px(opt.first_x + static_cast<double>(i));
        const CellClass k = classify_cell(y);
        const float top = k == CellClass::pos_inf ? a.y : a.y + h - 7;
        dl->AddRectFilled(ImVec2(x - 1.5f, top), ImVec2(x + 1.5f, top + 7), special(k));
      }
    }
    // A series with no point to draw says so in words (marks along an edge alone read as "no
    // data"): e.g. "trace LSE: all 64 -Inf" where every row is fully masked.
    float note_y = a.y + h / 2 - line;
    for (const PlotSeries& s : series) {
      if (!s.data || s.data->y.empty()) continue;
      size_t nan = 0, pos = 0, neg = 0, drawable = 0;
      for (float y : s.data->y) {
        if (frame.plottable(y)) ++drawable;
        else if (std::isnan(y)) ++nan;
        else if (std::isinf(y)) ++(y > 0 ? pos : neg);
      }
      if (drawable) continue;
      std::string note = s.data->name + ": ";
      const size_t n_all = s.data->y.size();
      if (nan == n_all) note += "all " + std::to_string(n_all) + " NaN";
      else if (neg == n_all) note += "all " + std::to_string(n_all) + " -Inf";
      else if (pos == n_all) note += "all " + std::to_string(n_all) + " +Inf";
      else note += "nothing to plot (" + std::to_string(nan) + " NaN, " + std::to_string(pos + neg) + " Inf)";
      const float nw = ImGui::CalcTextSize(note.c_str()).x;
      dl->AddText(ImVec2(a.x + std::max(4.0f, (w - nw) / 2), note_y), theme::kDimText, note.c_str());
      note_y += line + 2;
    }
  }
  dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(a.x + w + 1, a.y + h + 1), theme::kFrame);
  draw_legend();

  // Hover: the nearest x, every series' value there.
  ImGui::SetCursorScreenPos(a);
  ImGui::InvisibleButton("##plot", ImVec2(w, h));
  if (ImGui::IsItemHovered() && n > 0) {
    const double x = frame.x0 + (ImGui::GetIO().MousePos.x - a.x) / w * (frame.x1 - frame.x0);
    hover.index = nearest_index(x, opt.first_x, n);
    if (hover.index) {
      const float hx = px(opt.first_x + static_cast<double>(*hover.index));
      dl->AddLine(ImVec2(hx, a.y), ImVec2(hx, a.y + h), IM_COL32(255, 255, 255, 90));
      std::string text = opt.x_label + " " + format_tick(opt.first_x + static_cast<double>(*hover.index));
      for (const PlotSeries& s : series)
        if (s.data && *hover.index < s.data->y.size())
          text += "\n" + s.data->name + "  " + format_cell_value(s.data->y[*hover.index]);
      const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
      const float bx = hx + 8 + ts.x + 8 < a.x + w ? hx + 8 : hx - 16 - ts.x;
      dl->AddRectFilled(ImVec2(bx, a.y + 4), ImVec2(bx + ts.x + 8, a.y + 8 + ts.y), IM_COL32(20, 21, 24, 230), 3.0f);
      dl->AddText(ImVec2(bx + 4, a.y + 6), ImGui::GetColorU32(ImGuiCol_Text), text.c_str());
    }
  }
  ImGui::SetCursorScreenPos(p0);
  ImGui::Dummy(size);
  return hover;
}

}  // namespace ts
