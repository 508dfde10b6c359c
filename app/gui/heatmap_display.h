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

  // Fits min/max to the finite, unmasked values of all `grids` together (flags kept).
  void fit(std::span<const FloatGridView> grids);
};

// autofit() over several arrays at once.
ColorScale autofit_all(std::span<const FloatGridView> grids, ColorScale base);

}  // namespace ts
