// Where a heatmap view drew its image last frame, in ImGui screen coordinates (= framebuffer
// pixels times the framebuffer scale). Written out by --layout-json so that the screenshot
// tests know where each cell is; a panel can use it to annotate. No GL, no ImGui.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/heatmap_camera.h"
#include "app/model/colormap.h"

namespace ts {

struct HeatmapViewLayout {
  std::string name;
  float image_min_x = 0, image_min_y = 0, image_max_x = 0, image_max_y = 0;  // the image region
  double origin_x = 0, origin_y = 0;     // top-left corner of cell (0, 0)
  double px_per_col = 0, px_per_row = 0;
  int64_t rows = 0, cols = 0;
  size_t tiles = 0;                      // textures the array was cut into
  int tile_side = 0;
  ColormapId colormap = ColormapId::ember;
  ColorScale scale;
  std::optional<CellIndex> picked;       // the linked views' picked cell
};

// {"framebuffer_scale": [sx, sy], "views": [{...}, ...]}, written atomically. Throws
// FileWriteError.
void write_layout_json(const std::filesystem::path& path, const std::vector<HeatmapViewLayout>& views,
                       float framebuffer_scale_x, float framebuffer_scale_y);

}  // namespace ts
