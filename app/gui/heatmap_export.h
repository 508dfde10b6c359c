// PNG export of what a heatmap view shows: the same array, colormap, range and axis names,
// through the model's CPU renderer (app/model/heatmap_png.h).
#pragma once

#include <filesystem>
#include <string>

#include "app/gui/heatmap_display.h"
#include "app/gui/heatmap_view.h"
#include "app/model/heatmap_png.h"

namespace ts {

HeatmapPngOptions png_options_for(const HeatmapView& view, const HeatmapDisplay& display, std::string title);

// Throws GridShapeError when the view has no data, FileWriteError when `path` cannot be written.
HeatmapPngLayout export_view_png(const std::filesystem::path& path, const HeatmapView& view,
                                 const HeatmapDisplay& display, std::string title);

}  // namespace ts
