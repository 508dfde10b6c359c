// Checks a screenshot's heatmap cells against the CPU colormap: the pixel at each cell's centre
// (from the layout report) must be the colour map_value gives the cell's value under the view's
// scale, NaN / +Inf / -Inf / masked cells their documented colours. Shared by the screenshot tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "app/model/colormap.h"
#include "app/model/float_grid.h"
#include "tests/gui/screenshot_run.h"

namespace ts::test {

inline ColorScale scale_of(const nlohmann::json& v) {
  const auto& s = v["scale"];
  return {s["min"].get<float>(), s["max"].get<float>(), s["log"].get<bool>(), s["log_floor"].get<float>(),
          s["symmetric"].get<bool>(), s.value("split", false), s.value("split_at", 1.0f)};
}

// The colormap position t of a finite value under `s`, in float64 (independent of the
// model's float arithmetic).
inline double reference_t(double x, const ColorScale& s) {
  if (s.split) {
    // Two halves either side of split_at, each over its own side of the range (log or linear).
    const auto u = [&](double v) { return s.log ? std::log2(std::max(std::abs(v), double{s.log_floor})) : v; };
    const double lo = u(s.min), at = u(s.split_at), hi = u(s.max);
    if (x <= s.split_at) return 0.5 * std::clamp(at > lo ? (u(x) - lo) / (at - lo) : 0.0, 0.0, 1.0);
    return 0.5 + 0.5 * std::clamp(hi > at ? (u(x) - at) / (hi - at) : 0.0, 0.0, 1.0);
  }
  if (s.log && s.symmetric) {
    const double m = std::max(std::abs(double{s.min}), std::abs(double{s.max}));
    const double k = std::log2(std::max(m, double{s.log_floor}) / s.log_floor);
    const double u = (x > 0 ? 1 : x < 0 ? -1 : 0) * std::log2(std::max(std::abs(x), double{s.log_floor}) / s.log_floor);
    return 0.5 + 0.5 * u / k;
  }
  if (s.log) {
    const double f = s.log_floor, lo = std::log2(std::max(double{s.min}, f)), hi = std::log2(std::max(double{s.max}, f));
    return (std::log2(std::max(std::abs(x), f)) - lo) / (hi - lo);
  }
  if (s.symmetric) {
    const double m = std::max(std::abs(double{s.min}), std::abs(double{s.max}));
    return 0.5 + 0.5 * x / m;
  }
  return (x - s.min) / (double{s.max} - s.min);
}

struct CellCheck {
  size_t under_crosshair = 0;  // cells in the picked cell's row or column: skipped (see below)
  size_t cells = 0, nan = 0, pos_inf = 0, neg_inf = 0, masked = 0, near_edge = 0, wrong = 0;
  size_t never_written = 0, not_traced = 0;
};

// Every cell of `grid` in view `v` of the screenshot: the pixel at its centre must be the CPU
// colormap's colour. Where float rounding may pick the neighbouring table entry (the value sits
// on a bin edge to within `edge_tolerance` of a bin), either neighbour is accepted.
inline CellCheck check_cells(const Shot& shot, const nlohmann::json& v, const FloatGrid& grid, double edge_tolerance) {
  CellCheck out;
  const ColormapId cmap = colormap_from_name(v["colormap"].get<std::string>());
  const ColorScale scale = scale_of(v);
  const ColorMapper mapper(cmap, scale);
  const ColormapTable& table = colormap_table(cmap);
  const double fx = shot.layout["framebuffer_scale"][0], fy = shot.layout["framebuffer_scale"][1];
  const double ox = v["origin"][0], oy = v["origin"][1], px = v["px_per_cell"][0], py = v["px_per_cell"][1];
  EXPECT_GE(px, 4.0) << "cells too small to sample";
  EXPECT_GE(py, 4.0) << "cells too small to sample";
  const FloatGridView g = grid.view();
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < g.cols; ++c) {
      const int x = static_cast<int>(std::floor((ox + (c + 0.5) * px) * fx));
      const int y = static_cast<int>(std::floor((oy + (r + 0.5) * py) * fy));
      if (x < v["image_min"][0].get<double>() * fx || y < v["image_min"][1].get<double>() * fy ||
          x >= v["image_max"][0].get<double>() * fx || y >= v["image_max"][1].get<double>() * fy)
        continue;  // zoomed in: this cell is outside the view
      if (!shot.image.contains(x, y)) {
        ADD_FAILURE() << "cell (" << r << ", " << c << ") is off the screenshot";
        return out;
      }
      // The picked cell's crosshair runs through the centres of its row and column (a
      // translucent line by design): those cells are not sampled.
      if (!v["picked"].is_null() && (v["picked"][0] == r || v["picked"][1] == c)) {
        ++out.under_crosshair;
        continue;
      }
      const Rgba8 got = shot.image.at(x, y);
      const float value = g.at(r, c);
      ++out.cells;
      const CellClass k = classify_cell(value, g.absent(r, c));
      if (k != CellClass::finite) {
        // The documented colours, written out.
        const Rgba8 want = k == CellClass::nan       ? Rgba8{255, 0, 255, 255}
                           : k == CellClass::pos_inf ? Rgba8{0, 255, 0, 255}
                           : k == CellClass::neg_inf ? Rgba8{0, 255, 255, 255}
                           : k == CellClass::never_written ? Rgba8{75, 0, 255, 255}
                           : k == CellClass::not_traced    ? Rgba8{0, 140, 60, 255}
                           : k == CellClass::pending       ? Rgba8{0, 0, 160, 255}
                                                           : Rgba8{110, 110, 0, 255};
        EXPECT_EQ(got, want) << cell_class_name(k) << " cell (" << r << ", " << c << ") in " << v["name"];
        out.nan += k == CellClass::nan, out.pos_inf += k == CellClass::pos_inf, out.neg_inf += k == CellClass::neg_inf,
            out.masked += k == CellClass::masked, out.never_written += k == CellClass::never_written,
            out.not_traced += k == CellClass::not_traced;
        continue;
      }
      const double ti = std::clamp(reference_t(value, scale), 0.0, 1.0) * 256.0;
      const int cpu = mapper.lut_index(value);
      if (got == mapper(value)) continue;
      if (ti > 0 && ti < 256 && std::abs(ti - std::round(ti)) < edge_tolerance) {
        ++out.near_edge;
        const int lo = std::max(0, cpu - 1), hi = std::min(255, cpu + 1);
        bool neighbour = false;
        for (int i = lo; i <= hi; ++i) neighbour |= got == table[static_cast<size_t>(i)];
        EXPECT_TRUE(neighbour) << "cell (" << r << ", " << c << ") value " << value << " at a bin edge: got "
                               << to_string(got) << ", CPU index " << cpu;
        continue;
      }
      ADD_FAILURE() << v["name"] << " cell (" << r << ", " << c << ") value " << value << ": screen "
                    << to_string(got) << ", CPU colormap " << to_string(mapper(value)) << " (index " << cpu
                    << ", t*256 = " << ti << ")";
      if (++out.wrong >= 20) return out;  // enough said
    }
  return out;
}

}  // namespace ts::test
