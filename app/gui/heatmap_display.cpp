#include "app/gui/heatmap_display.h"

namespace ts {

ColorScale autofit_all(std::span<const FloatGridView> grids, ColorScale base) {
  ValueStats all;
  for (const FloatGridView& g : grids) all = combine(all, value_stats(g.values, g.mask));
  return fit_scale(all, base);
}

HeatmapDisplay HeatmapDisplay::for_error_ratio() {
  HeatmapDisplay d;
  d.error_ratio = true;
  d.use_tolerance_scale();
  return d;
}

void HeatmapDisplay::use_tolerance_scale() {
  colormap = kToleranceColormap;
  scale = tolerance_scale();
  auto_range = false;
}

void HeatmapDisplay::fit(std::span<const FloatGridView> grids) { scale = autofit_all(grids, scale); }

}  // namespace ts
