#include "app/gui/heatmap_display.h"

namespace ts {

ColorScale autofit_all(std::span<const FloatGridView> grids, ColorScale base) {
  ValueStats all;
  for (const FloatGridView& g : grids) all = combine(all, value_stats(g.values, g.mask));
  return fit_scale(all, base);
}

void HeatmapDisplay::fit(std::span<const FloatGridView> grids) { scale = autofit_all(grids, scale); }

}  // namespace ts
