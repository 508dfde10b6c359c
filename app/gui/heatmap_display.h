// How a heatmap's values become colours in a view: colormap, colour scale, and whether the
// range follows the data. A panel may give two views the same HeatmapDisplay (trace and
// reference share one range, so equal values look equal). No GL, no ImGui.
#pragma once

#include <span>

#include "app/model/colormap.h"
#include "app/model/float_grid.h"

namespace ts {

struct HeatmapDisplay {
  ColormapId colormap = ColormapId::ember;
  ColorScale scale;
  bool auto_range = true;  // refit when the data or the scale's flags change
  // The values are error / tolerance: drawn by default on the one fixed tolerance scale
  // (colormap.h: tolerance_scale), which the controls offer back after any change.
  bool error_ratio = false;

  // An error / tolerance map's display: the tolerance colormap on tolerance_scale(), fixed.
  static HeatmapDisplay for_error_ratio();
  // Back to that fixed scale (error / tolerance maps).
  void use_tolerance_scale();
  bool on_tolerance_scale() const { return colormap == kToleranceColormap && scale == tolerance_scale() && !auto_range; }

  // Fits min/max to the finite, unmasked values of all `grids` together (flags kept).
  void fit(std::span<const FloatGridView> grids);
};

// autofit() over several arrays at once.
ColorScale autofit_all(std::span<const FloatGridView> grids, ColorScale base);

}  // namespace ts
