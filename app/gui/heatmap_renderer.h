// Draws HeatmapTextures with the heatmap shaders (shaders/heatmap.vert, .frag) inside Dear
// ImGui's draw lists. add() queues, at the current point of a window's draw commands, a
// callback that (1) renders the heatmap into the view's HeatmapRenderCache (an offscreen
// texture) when what it shows changed since the last frame, and (2) copies that onto the
// screen pixel for pixel, clipped like any widget; so outlines and labels drawn after add()
// land on top of the heatmap.
#pragma once

#include <array>
#include <deque>
#include <memory>

#include <imgui.h>

#include "app/gui/colormap_textures.h"
#include "app/gui/gl_objects.h"
#include "app/gui/heatmap_render_cache.h"
#include "app/gui/heatmap_texture.h"
#include "app/model/colormap.h"

namespace ts {

// Where a heatmap goes this frame, in ImGui screen coordinates.
struct HeatmapPlacement {
  ImVec2 clip_min, clip_max;          // the image region: nothing is drawn outside it
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

  // Queues `texture` drawn through `cache` (both must stay alive until the frame is rendered).
  // Throws GlError if the offscreen texture cannot be made.
  void add(ImDrawList* draw_list, const HeatmapTexture& texture, ColormapId colormap, const ColorScale& scale,
           const HeatmapPlacement& where, HeatmapRenderCache& cache);

  // Re-renders of a cache so far (for tests and the frame statistics).
  uint64_t renders() const { return renders_; }

  ColormapTextures& colormaps() { return colormaps_; }

 private:
  struct Request {
    HeatmapRenderer* self;
    const HeatmapTexture* texture;
    HeatmapRenderCache* cache;
    ColormapId colormap;
    HeatmapRenderKey key;
    ImVec2 clip_min, clip_max;  // the region on screen
  };
  static void render_callback(const ImDrawList* list, const ImDrawCmd* cmd);
  void render(const Request& request);  // into the cache, if it is stale
  void blit(const Request& request, const ImDrawCmd& cmd);  // the cache onto the screen

  // One program per variant of shaders/heatmap.frag (scale kind x NaN/Inf pooling x split), compiled
  // on first use.
  struct Program {
    GlProgram program;
    GLint projection, cells, colormap, special, floor, log2_floor, lo, gain, bias, pooled, block, half_footprint;
    GLint split_at, split_u, gain_high;
  };
  Program& program_for(bool log, bool signed_log, bool pooling, bool split);
  // half_x, half_y: how far (in cells) a pixel looks for NaN / Inf when pooling.
  void use(Program& p, const ScaleMapping& m, const float* projection, int kx, int ky, double half_x, double half_y);

  std::deque<Request> requests_;  // stable addresses: the callbacks point into it
  std::array<std::unique_ptr<Program>, 16> programs_;
  GlVertexArray vao_;
  GlBuffer vbo_;
  ColormapTextures colormaps_;
  uint64_t renders_ = 0;
};

}  // namespace ts
