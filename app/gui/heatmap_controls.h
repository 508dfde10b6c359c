// The controls of a HeatmapDisplay: colormap, black and white points (which turn autofit
// off), autofit, symmetric and log scales (log floor). Two compact lines, sized to `width`.
#pragma once

#include <span>

#include "app/gui/heatmap_display.h"

namespace ts {

// `data` is what autofit fits to (several arrays when views share the display). Returns true
// when anything changed.
bool draw_heatmap_controls(const char* id, HeatmapDisplay& display, std::span<const FloatGridView> data, float width);

}  // namespace ts
