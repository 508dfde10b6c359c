// Draws HeatmapTextures with the heatmap shaders (shaders/heatmap.vert, .frag) inside Dear
// ImGui's draw lists: add() queues an ImDrawList callback at the current point of a window's
// draw commands, so the heatmap is drawn in order with the widgets around it (outlines drawn
// after it land on top) and clipped like them.
#pragma once

#include <array>
#include <deque>
#include <memory>

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
  // Compiles the embedded shaders (the linear variant now, others on first use): needs a
  // current GL 3.3 context. Throws GlError.
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

  // One program per variant of shaders/heatmap.frag (scale kind x NaN/Inf pooling), compiled
  // on first use.
  struct Program {
    GlProgram program;
    GLint projection, cells, colormap, special, floor, log2_floor, lo, gain, bias, pooled, block, half_footprint;
  };
  Program& program_for(bool log, bool signed_log, bool pooling);
  void use(Program& p, const Request& r, const float* projection, double cell_px_x, double cell_px_y, int kx, int ky);

  std::deque<Request> requests_;  // stable addresses: the callbacks point into it
  std::array<std::unique_ptr<Program>, 8> programs_;
  GlVertexArray vao_;
  GlBuffer vbo_;
  ColormapTextures colormaps_;
};

}  // namespace ts
