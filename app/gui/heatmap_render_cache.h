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

  friend bool operator==(const HeatmapRenderKey& a, const HeatmapRenderKey& b) {
    const ScaleMapping &m = a.mapping, &n = b.mapping;
    return a.texture_generation == b.texture_generation && a.colormap == b.colormap && m.log == n.log &&
           m.signed_log == n.signed_log && m.floor == n.floor && m.log2_floor == n.log2_floor && m.lo == n.lo &&
           m.gain == n.gain && m.bias == n.bias && a.origin_x == b.origin_x && a.origin_y == b.origin_y &&
           a.px_per_col == b.px_per_col && a.px_per_row == b.px_per_row && a.width == b.width &&
           a.height == b.height;
  }
};

struct HeatmapRenderCache {
  GlFramebuffer framebuffer;
  GlTexture color;  // RGBA8, nearest filtering: drawn 1:1 onto the screen
  int width = 0, height = 0;
  bool valid = false;
  HeatmapRenderKey key;
};

}  // namespace ts
