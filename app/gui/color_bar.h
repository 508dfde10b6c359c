// A horizontal colour bar: the colormap's table (the very texture the shader reads) with the
// values of its ends and middle, and a legend of the special colours with their counts.
#pragma once

#include "app/gui/colormap_textures.h"
#include "app/gui/heatmap_display.h"

namespace ts {

void draw_color_bar(ColormapTextures& textures, const HeatmapDisplay& display, const ValueStats& stats, float width);

}  // namespace ts
