// A line plot drawn with ImDrawList (ImGui's PlotLines has no axes, legend or second series):
// numbered axes, several series (trace vs reference) with a legend, horizontal reference lines
// (the tolerance), a highlighted x band (the selected event's rows), marks for NaN and
// infinite points along the edges, and a readout of every series at the x under the cursor.
// Long series are reduced to their min / max per pixel column, so every spike stays visible.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <imgui.h>

#include "app/model/viewer/curve_frame.h"

namespace ts {

// Series are drawn last to first, so the first lies on top: give a reference a wider,
// translucent line and the trace a thin one, and both show where they coincide.
struct PlotSeries {
  const CurveSeries* data = nullptr;
  ImU32 color = 0;
  float thickness = 1.5f;
};

struct CurvePlotOptions {
  std::string x_label = "query row";
  double first_x = 0;                       // x of index 0
  bool log_y = false;                       // values <= 0 sit on the bottom edge
  std::vector<std::pair<double, std::string>> hlines;  // e.g. {1.0, "tolerance"}
  std::optional<std::pair<double, double>> band;       // x range to highlight [a, b]
};

// What the cursor is over (for callers that react to it), and where the plot drew, from the last
// draw: the plot area's corners in screen units and the frame it maps (index i of a series is
// at x = first_x + i; a value y at frame.fy(y) up from the bottom edge).
struct CurvePlotHover {
  std::optional<size_t> index;
  float min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  CurveFrame frame;
};

// Lays the plot out over `size` at the cursor. Returns what the cursor was over.
CurvePlotHover draw_curve_plot(const char* id, const std::string& title, std::span<const PlotSeries> series,
                               const CurvePlotOptions& options, ImVec2 size);

}  // namespace ts
