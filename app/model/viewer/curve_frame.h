// The maths of the viewer's curve plots (m and l over the query rows, trace vs reference; error
// by query index): the value range that frames the finite points of several series, linear or
// log, its ticks, the mapping to pixels and the point under the cursor. No GL, no ImGui.
//
// A series holds y per index; the x of index i is first_x + i (query rows). Non-finite points
// (NaN, infinities, and <= 0 on a log axis) are left out of the range and drawn as gaps.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ts {

struct CurveSeries {
  std::string name;
  std::vector<float> y;
};

struct CurveFrame {
  double x0 = 0, x1 = 1;  // x range (first_x .. first_x + n - 1, widened to a non-empty span)
  double y0 = 0, y1 = 1;  // y range (positive on a log axis)
  bool log_y = false;

  // [0, 1] along each axis (y: 0 at y0). Values outside the frame map outside [0, 1].
  double fx(double x) const { return (x - x0) / (x1 - x0); }
  double fy(double y) const;
  bool plottable(double y) const;  // finite, and > 0 on a log axis
};

// Frames every plottable point of `series` (and `also_y` values, e.g. a tolerance line of 1),
// with a little headroom on linear axes. With no plottable point: [0, 1] (log: [0.1, 10]).
CurveFrame fit_curve_frame(std::span<const CurveSeries> series, double first_x, bool log_y,
                           std::span<const double> also_y = {});

// Tick values inside [lo, hi]: multiples of a 1-2-5 step, at most about max_ticks of them; on a
// log axis the powers of ten (or 1-2-5 within a decade when the range spans less than two).
std::vector<double> curve_ticks(double lo, double hi, bool log, int max_ticks);

// The index whose x is nearest to `x` (clamped to the series), nothing when n == 0.
std::optional<size_t> nearest_index(double x, double first_x, size_t n);

// "1.5e-03", "12.25", "-3": short labels for ticks and readouts.
std::string format_tick(double value);

}  // namespace ts
