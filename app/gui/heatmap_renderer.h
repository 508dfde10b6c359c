// Draws HeatmapTextures with the heatmap shaders (shaders/heatmap.vert, .frag) inside Dear
// ImGui's draw lists: add() queues an ImDrawList callback at the current point of a window's
// draw commands, so the heatmap is drawn in order with the widgets around it (outlines drawn
// after it land on top) and clipped like them.
#pragma once

#include <deque>

#include <imgui.h>

#include "app/gui/colormap_textures.h"
#include "app/gui/gl_objects.h"
#include "app/gui/heatmap_texture.h"
#include "app/model/colormap.h"

namespace ts {

// Where a heatmap goes this frame, in ImGui screen coordinates.
struct HeatmapPlacement {
  ImVec2 clip_min, clip_max;       // the image region: nothing is drawn outside it
  double origin_x = 0, origin_y = 0;  // top-left corner of cell (0, 0)
  double px_per_col = 1, px_per_row = 1;
};

class HeatmapRenderer {
 public:
  // Compiles the embedded shaders: needs a current GL 3.3 context. Throws GlError.
  HeatmapRenderer();

  // Call once per frame before any add(): drops the previous frame's queued draws.
  void begin_frame() { requests_.clear(); }

  // Queues a draw of `texture` (which must stay alive until the frame is rendered).
  void add(ImDrawList* draw_list, const HeatmapTexture& texture, ColormapId colormap, const ColorScale& scale,
           const HeatmapPlacement& where);

  ColormapTextures& colormaps() { return colormaps_; }

 private:
  struct Request {
    HeatmapRenderer* self;
    const HeatmapTexture* texture;
    ColormapId colormap;
    ScaleMapping mapping;
    HeatmapPlacement where;
  };
  static void draw_callback(const ImDrawList* list, const ImDrawCmd* cmd);
  void draw(const Request& request, const ImDrawCmd& cmd);

  std::deque<Request> requests_;  // stable addresses: the callbacks point into it
  GlProgram program_;
  GlVertexArray vao_;
  GlBuffer vbo_;
  ColormapTextures colormaps_;
  struct Uniforms {
    GLint projection, values, classes, colormap, special, log, signed_log, floor, log2_floor, lo, gain, bias;
    GLint pooling, pooled, block, half_footprint;
  } u_{};
};

}  // namespace ts
