// A view's heatmap as last rendered: an offscreen colour texture (framebuffer object) the size
// of the image region, re-rendered only when what it shows changes (data, colormap, scale,
// zoom, pan, size). Every other frame costs one textured quad: a software rasteriser (Mesa's
// llvmpipe under Xvfb, or a laptop without a GPU driver) shades 3 large views at 60 fps.
#pragma once

#include <cstdint>

#include "app/gui/gl_objects.h"
#include "app/model/colormap.h"

namespace ts {

// Everything the rendered picture depends on.
struct HeatmapRenderKey {
  uint64_t texture_generation = 0;
  ColormapId colormap = ColormapId::ember;
  ScaleMapping mapping;
  double origin_x = 0, origin_y = 0;  // cell (0, 0) relative to the region's top-left
  double px_per_col = 0, px_per_row = 0;
  int width = 0, height = 0;          // framebuffer pixels

  friend bool operator==(const HeatmapRenderKey&, const HeatmapRenderKey&) = default;
};

struct HeatmapRenderCache {
  GlFramebuffer framebuffer;
  GlTexture color;  // RGBA8, nearest filtering: drawn 1:1 onto the screen
  int width = 0, height = 0;
  bool valid = false;
  HeatmapRenderKey key;
};

}  // namespace ts
