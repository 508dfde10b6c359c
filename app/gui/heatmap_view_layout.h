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

#include <nlohmann/json.hpp>

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
  struct RowLabel {
    int64_t row = 0;
    std::string text;
    float min_x = 0, min_y = 0, max_x = 0, max_y = 0;  // the text's box
  };
  std::vector<RowLabel> row_labels;      // the row labels drawn left of the image
};

// A rectangle a panel drew over a view (the first divergence, the selected event), in the same
// screen coordinates, with the cells it frames.
struct LayoutMark {
  std::string name;  // "first divergence", "selected event"
  std::string view;  // the view it is drawn on
  float min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  int64_t row0 = 0, row1 = 0, col0 = 0, col1 = 0;  // cells [row0, row1) x [col0, col1)
};

// {"framebuffer_scale": [sx, sy], "views": [{...}, ...], "marks": [...], ...extra}, written
// atomically. `extra` (an object) adds keys, e.g. the panel and the selected event. Throws
// FileWriteError.
void write_layout_json(const std::filesystem::path& path, const std::vector<HeatmapViewLayout>& views,
                       float framebuffer_scale_x, float framebuffer_scale_y,
                       const std::vector<LayoutMark>& marks = {}, const nlohmann::json& extra = nullptr);

}  // namespace ts
