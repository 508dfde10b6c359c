#include "app/gui/heatmap_renderer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "app/gui/shader_program.h"
#include "app/gui/special_cell_pooling.h"
#include "shaders/embedded_shaders.h"

namespace ts {

HeatmapRenderer::HeatmapRenderer() : vao_(GlVertexArray::create()), vbo_(GlBuffer::create()) {
  program_for(false, false, false);  // a driver that cannot compile the shaders fails here, at start
  glBindVertexArray(vao_.id());
  glBindBuffer(GL_ARRAY_BUFFER, vbo_.id());
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), nullptr);
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), reinterpret_cast<void*>(2 * sizeof(float)));
  glBindVertexArray(0);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
}

HeatmapRenderer::Program& HeatmapRenderer::program_for(bool log, bool signed_log, bool pooling) {
  std::unique_ptr<Program>& slot = programs_[(log ? 1 : 0) | (signed_log ? 2 : 0) | (pooling ? 4 : 0)];
  if (!slot) {
    // The variant's macros go right after the #version line, which must stay first.
    std::string frag(shaders::heatmap_frag);
    const size_t eol = frag.find('\n') + 1;
    frag.insert(eol, std::string("#define TS_LOG ") + (log ? "1" : "0") + "\n#define TS_SIGNED_LOG " +
                         (signed_log ? "1" : "0") + "\n#define TS_POOLING " + (pooling ? "1" : "0") + "\n");
    auto p = std::make_unique<Program>();
    p->program = build_shader_program("heatmap", shaders::heatmap_vert, frag);
    const GLuint id = p->program.id();
    const auto at = [id](const char* name) { return glGetUniformLocation(id, name); };
    p->projection = at("u_projection");
    p->cells = at("u_cells");
    p->colormap = at("u_colormap");
    p->special = at("u_special");
    p->floor = at("u_floor");
    p->log2_floor = at("u_log2_floor");
    p->lo = at("u_lo");
    p->gain = at("u_gain");
    p->bias = at("u_bias");
    p->pooled = at("u_pooled");
    p->block = at("u_block");
    p->half_footprint = at("u_half_footprint");
    slot = std::move(p);
  }
  return *slot;
}

void HeatmapRenderer::use(Program& p, const Request& r, const float* projection, double cell_px_x, double cell_px_y,
                          int kx, int ky) {
  glUseProgram(p.program.id());
  glUniformMatrix4fv(p.projection, 1, GL_FALSE, projection);
  glUniform1i(p.cells, 0);
  glUniform1i(p.colormap, 2);
  glUniform1i(p.pooled, 3);  // its own unit: samplers of different types must not share one
  std::array<float, 4 * kCellClassCount> special{};
  for (size_t k = 1; k < kCellClassCount; ++k) {
    const Rgba8 c = special_color(static_cast<CellClass>(k));
    special[4 * k + 0] = c.r / 255.0f;
    special[4 * k + 1] = c.g / 255.0f;
    special[4 * k + 2] = c.b / 255.0f;
    special[4 * k + 3] = c.a / 255.0f;
  }
  glUniform4fv(p.special, static_cast<GLsizei>(kCellClassCount), special.data());
  const ScaleMapping& m = r.mapping;
  glUniform1f(p.floor, m.floor);
  glUniform1f(p.log2_floor, m.log2_floor);
  glUniform1f(p.lo, m.lo);
  glUniform1f(p.gain, m.gain);
  glUniform1f(p.bias, m.bias);
  glUniform2f(p.block, static_cast<float>(1 << kx), static_cast<float>(1 << ky));
  glUniform2f(p.half_footprint, static_cast<float>(0.5 / cell_px_x), static_cast<float>(0.5 / cell_px_y));
}

void HeatmapRenderer::add(ImDrawList* draw_list, const HeatmapTexture& texture, ColormapId colormap,
                          const ColorScale& scale, const HeatmapPlacement& where) {
  if (texture.tiles().empty()) return;
  requests_.push_back({this, &texture, colormap, scale_mapping(scale), where});
  draw_list->AddCallback(&HeatmapRenderer::draw_callback, &requests_.back());
  draw_list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);  // give ImGui its GL state back
}

void HeatmapRenderer::draw_callback(const ImDrawList*, const ImDrawCmd* cmd) {
  const auto* request = static_cast<const Request*>(cmd->UserCallbackData);
  request->self->draw(*request, *cmd);
}

void HeatmapRenderer::draw(const Request& r, const ImDrawCmd& cmd) {
  const ImDrawData* dd = ImGui::GetDrawData();
  if (!dd) return;
  const HeatmapPlacement& w = r.where;
  // The region, clipped by the window's own clip rectangle at the time of add().
  const float x0 = std::max(w.clip_min.x, cmd.ClipRect.x), y0 = std::max(w.clip_min.y, cmd.ClipRect.y);
  const float x1 = std::min(w.clip_max.x, cmd.ClipRect.z), y1 = std::min(w.clip_max.y, cmd.ClipRect.w);
  if (x1 <= x0 || y1 <= y0) return;
  const ImVec2 pos = dd->DisplayPos, size = dd->DisplaySize, scale = dd->FramebufferScale;
  const float fb_h = size.y * scale.y;
  glEnable(GL_SCISSOR_TEST);
  glScissor(static_cast<GLint>((x0 - pos.x) * scale.x), static_cast<GLint>(fb_h - (y1 - pos.y) * scale.y),
            static_cast<GLsizei>((x1 - x0) * scale.x), static_cast<GLsizei>((y1 - y0) * scale.y));
  glDisable(GL_BLEND);  // cells are opaque: their colour must reach the framebuffer unchanged

  // ImGui's own projection: screen coordinates, y down.
  const float L = pos.x, R = pos.x + size.x, T = pos.y, B = pos.y + size.y;
  const float ortho[16] = {2.0f / (R - L), 0, 0, 0, 0, 2.0f / (T - B), 0, 0, 0, 0, -1, 0,
                           (R + L) / (L - R), (T + B) / (B - T), 0, 1};
  glActiveTexture(GL_TEXTURE2);
  glBindTexture(GL_TEXTURE_2D, colormaps_.texture(r.colormap));

  // Several cells per framebuffer pixel: NaN / Inf come from the pooled severity too.
  const double cell_px_x = w.px_per_col * scale.x, cell_px_y = w.px_per_row * scale.y;
  const int kx = pooling_level(cell_px_x), ky = pooling_level(cell_px_y);
  Program* current = nullptr;

  // The cells that can show through the clip rectangle; tiles outside it are skipped and
  // quads are cut to it, so vertex coordinates stay small however far one zooms in.
  const HeatmapTexture& tex = *r.texture;
  auto range = [](double lo_px, double hi_px, double origin, double px_per_cell, int64_t n) {
    const double a = std::floor((lo_px - origin) / px_per_cell), b = std::ceil((hi_px - origin) / px_per_cell);
    return std::pair<int64_t, int64_t>{static_cast<int64_t>(std::clamp(a, 0.0, static_cast<double>(n))),
                                       static_cast<int64_t>(std::clamp(b, 0.0, static_cast<double>(n)))};
  };
  const auto [c_begin, c_end] = range(x0, x1, w.origin_x, w.px_per_col, tex.cols());
  const auto [r_begin, r_end] = range(y0, y1, w.origin_y, w.px_per_row, tex.rows());

  glBindVertexArray(vao_.id());
  glBindBuffer(GL_ARRAY_BUFFER, vbo_.id());
  for (const HeatmapTile& t : tex.tiles()) {
    const int64_t ca = std::max(c_begin, t.col0), cb = std::min(c_end, t.col0 + t.cols);
    const int64_t ra = std::max(r_begin, t.row0), rb = std::min(r_end, t.row0 + t.rows);
    if (ca >= cb || ra >= rb) continue;
    const auto sx = [&](int64_t c) { return static_cast<float>(w.origin_x + static_cast<double>(c) * w.px_per_col); };
    const auto sy = [&](int64_t row) { return static_cast<float>(w.origin_y + static_cast<double>(row) * w.px_per_row); };
    const auto u = [&](int64_t c) { return static_cast<float>(c - t.col0); };
    const auto v = [&](int64_t row) { return static_cast<float>(row - t.row0); };
    const float quad[16] = {sx(ca), sy(ra), u(ca), v(ra), sx(cb), sy(ra), u(cb), v(ra),
                            sx(ca), sy(rb), u(ca), v(rb), sx(cb), sy(rb), u(cb), v(rb)};
    glBufferData(GL_ARRAY_BUFFER, sizeof quad, quad, GL_STREAM_DRAW);
    const bool pooling = (kx > 0 || ky > 0) && !t.severity.empty();
    Program& p = program_for(r.mapping.log, r.mapping.signed_log, pooling);
    if (&p != current) use(p, r, ortho, cell_px_x, cell_px_y, kx, ky), current = &p;
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, t.cells.id());
    if (pooling) {
      glActiveTexture(GL_TEXTURE3);
      glBindTexture(GL_TEXTURE_2D, t.pooled_severity(kx, ky));
    }
    glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  }
  glActiveTexture(GL_TEXTURE2);
  glBindTexture(GL_TEXTURE_2D, 0);
  glActiveTexture(GL_TEXTURE3);
  glBindTexture(GL_TEXTURE_2D, 0);
  glActiveTexture(GL_TEXTURE0);
  glBindVertexArray(0);
}

}  // namespace ts
