#include "app/gui/heatmap_renderer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "app/gui/shader_program.h"
#include "app/gui/special_cell_pooling.h"
#include "app/gui/theme.h"
#include "shaders/embedded_shaders.h"

namespace ts {

HeatmapRenderer::HeatmapRenderer() : vao_(GlVertexArray::create()), vbo_(GlBuffer::create()) {
  program_for(false, false, false, false);  // a driver that cannot compile the shaders fails here, at start
  glBindVertexArray(vao_.id());
  glBindBuffer(GL_ARRAY_BUFFER, vbo_.id());
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), nullptr);
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), reinterpret_cast<void*>(2 * sizeof(float)));
  glBindVertexArray(0);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
}

HeatmapRenderer::Program& HeatmapRenderer::program_for(bool log, bool signed_log, bool pooling, bool split) {
  std::unique_ptr<Program>& slot = programs_[(log ? 1 : 0) | (signed_log ? 2 : 0) | (pooling ? 4 : 0) | (split ? 8 : 0)];
  if (!slot) {
    // The variant's macros go right after the #version line, which must stay first.
    std::string frag(shaders::heatmap_frag);
    const size_t eol = frag.find('\n') + 1;
    frag.insert(eol, std::string("#define TS_LOG ") + (log ? "1" : "0") + "\n#define TS_SIGNED_LOG " +
                         (signed_log ? "1" : "0") + "\n#define TS_POOLING " + (pooling ? "1" : "0") +
                         "\n#define TS_SPLIT " + (split ? "1" : "0") + "\n");
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
    p->split_at = at("u_split_at");
    p->split_u = at("u_split_u");
    p->gain_high = at("u_gain_high");
    p->pooled = at("u_pooled");
    p->block = at("u_block");
    p->half_footprint = at("u_half_footprint");
    slot = std::move(p);
  }
  return *slot;
}

void HeatmapRenderer::use(Program& p, const ScaleMapping& m, const float* projection, int kx, int ky,
                          double half_x, double half_y) {
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
  glUniform1f(p.floor, m.floor);
  glUniform1f(p.log2_floor, m.log2_floor);
  glUniform1f(p.lo, m.lo);
  glUniform1f(p.gain, m.gain);
  glUniform1f(p.bias, m.bias);
  if (m.split) {
    glUniform1f(p.split_at, m.split_at);
    glUniform1f(p.split_u, m.split_u);
    glUniform1f(p.gain_high, m.gain_high);
  }
  glUniform2f(p.block, static_cast<float>(1 << kx), static_cast<float>(1 << ky));
  glUniform2f(p.half_footprint, static_cast<float>(half_x), static_cast<float>(half_y));
}

void HeatmapRenderer::add(ImDrawList* draw_list, const HeatmapTexture& texture, ColormapId colormap,
                          const ColorScale& scale, const HeatmapPlacement& where, HeatmapRenderCache& cache) {
  const ImVec2 fb_scale = ImGui::GetIO().DisplayFramebufferScale;
  HeatmapRenderKey key;
  key.texture_generation = texture.generation();
  key.colormap = colormap;
  key.mapping = scale_mapping(scale);
  // The cache works in framebuffer pixels relative to the region's top-left corner.
  key.origin_x = (where.origin_x - where.clip_min.x) * fb_scale.x;
  key.origin_y = (where.origin_y - where.clip_min.y) * fb_scale.y;
  key.px_per_col = where.px_per_col * fb_scale.x;
  key.px_per_row = where.px_per_row * fb_scale.y;
  key.width = static_cast<int>(std::lround((where.clip_max.x - where.clip_min.x) * fb_scale.x));
  key.height = static_cast<int>(std::lround((where.clip_max.y - where.clip_min.y) * fb_scale.y));
  if (key.width <= 0 || key.height <= 0 || texture.tiles().empty()) return;

  if (!cache.framebuffer || cache.width != key.width || cache.height != key.height) {
    if (!cache.framebuffer) cache.framebuffer = GlFramebuffer::create();
    cache.color = GlTexture::create();
    glBindTexture(GL_TEXTURE_2D, cache.color.id());
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAX_LEVEL, 0);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, key.width, key.height, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    glBindTexture(GL_TEXTURE_2D, 0);
    GLint previous = 0;
    glGetIntegerv(GL_FRAMEBUFFER_BINDING, &previous);
    glBindFramebuffer(GL_FRAMEBUFFER, cache.framebuffer.id());
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, cache.color.id(), 0);
    const GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
    glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(previous));
    if (status != GL_FRAMEBUFFER_COMPLETE) {
      cache = HeatmapRenderCache{};
      throw GlError("this GL driver cannot render a heatmap offscreen (framebuffer status " + std::to_string(status) +
                    ")");
    }
    cache.width = key.width;
    cache.height = key.height;
    cache.valid = false;
  }

  requests_.push_back({this, &texture, &cache, colormap, key, where.clip_min, where.clip_max});
  draw_list->AddCallback(&HeatmapRenderer::render_callback, &requests_.back());
  draw_list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);  // give ImGui its GL state back
}

void HeatmapRenderer::render_callback(const ImDrawList*, const ImDrawCmd* cmd) {
  const auto* request = static_cast<const Request*>(cmd->UserCallbackData);
  request->self->render(*request);
  request->self->blit(*request, *cmd);
}

void HeatmapRenderer::blit(const Request& r, const ImDrawCmd& cmd) {
  // A framebuffer blit, not a textured quad: no shading, no blending, pixel for pixel.
  const ImDrawData* dd = ImGui::GetDrawData();
  if (!dd || !r.cache->valid) return;
  const ImVec2 pos = dd->DisplayPos, scale = dd->FramebufferScale;
  const float fb_h = dd->DisplaySize.y * scale.y;
  const float x0 = std::max(r.clip_min.x, cmd.ClipRect.x), y0 = std::max(r.clip_min.y, cmd.ClipRect.y);
  const float x1 = std::min(r.clip_max.x, cmd.ClipRect.z), y1 = std::min(r.clip_max.y, cmd.ClipRect.w);
  if (x1 <= x0 || y1 <= y0) return;
  glEnable(GL_SCISSOR_TEST);  // the window's clipping
  glScissor(static_cast<GLint>((x0 - pos.x) * scale.x), static_cast<GLint>(fb_h - (y1 - pos.y) * scale.y),
            static_cast<GLsizei>((x1 - x0) * scale.x), static_cast<GLsizei>((y1 - y0) * scale.y));
  const auto dx = static_cast<GLint>(std::lround((r.clip_min.x - pos.x) * scale.x));
  const auto dy = static_cast<GLint>(std::lround(fb_h - (r.clip_max.y - pos.y) * scale.y));
  GLint draw_fb = 0;
  glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &draw_fb);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, r.cache->framebuffer.id());
  glBlitFramebuffer(0, 0, r.key.width, r.key.height, dx, dy, dx + r.key.width, dy + r.key.height, GL_COLOR_BUFFER_BIT,
                    GL_NEAREST);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, static_cast<GLuint>(draw_fb));
}

void HeatmapRenderer::render(const Request& r) {
  HeatmapRenderCache& cache = *r.cache;
  const HeatmapRenderKey& k = r.key;
  if (cache.valid && cache.key == k) return;  // the picture is already there

  GLint previous = 0;
  glGetIntegerv(GL_FRAMEBUFFER_BINDING, &previous);
  glBindFramebuffer(GL_FRAMEBUFFER, cache.framebuffer.id());
  glViewport(0, 0, k.width, k.height);
  glDisable(GL_SCISSOR_TEST);
  glDisable(GL_BLEND);  // cells are opaque: their colour must reach the texture unchanged
  const ImVec4 bg = ImGui::ColorConvertU32ToFloat4(theme::kImageBackground);
  glClearColor(bg.x, bg.y, bg.z, bg.w);
  glClear(GL_COLOR_BUFFER_BIT);

  // Region pixels (y down) to clip space, top row at +1.
  const float W = static_cast<float>(k.width), H = static_cast<float>(k.height);
  const float ortho[16] = {2.0f / W, 0, 0, 0, 0, -2.0f / H, 0, 0, 0, 0, -1, 0, -1, 1, 0, 1};
  glActiveTexture(GL_TEXTURE2);
  glBindTexture(GL_TEXTURE_2D, colormaps_.texture(r.colormap));

  // Several cells per pixel: NaN / Inf come from the pooled severity too. Along an axis with
  // cells under a pixel, a pixel looks 1.5 pixels each way (so a lone NaN shows as a mark of
  // at least 3 pixels, not a hairline), and the blocks are at least that footprint, so that it
  // touches at most two of them; along the other axis it looks within itself only.
  const bool pool_x = k.px_per_col < 1.0, pool_y = k.px_per_row < 1.0;
  const double reach_x = pool_x ? 1.5 : 0.49, reach_y = pool_y ? 1.5 : 0.49;
  const int kx = pool_x ? pooling_level(k.px_per_col / (2 * reach_x)) : 0;
  const int ky = pool_y ? pooling_level(k.px_per_row / (2 * reach_y)) : 0;
  const double half_x = reach_x / k.px_per_col, half_y = reach_y / k.px_per_row;

  // Only the cells in the region; tiles outside it are skipped and quads are cut to it, so
  // vertex coordinates stay small however far one zooms in.
  const HeatmapTexture& tex = *r.texture;
  auto range = [](double extent, double origin, double px_per_cell, int64_t n) {
    const double a = std::floor(-origin / px_per_cell), b = std::ceil((extent - origin) / px_per_cell);
    return std::pair<int64_t, int64_t>{static_cast<int64_t>(std::clamp(a, 0.0, static_cast<double>(n))),
                                       static_cast<int64_t>(std::clamp(b, 0.0, static_cast<double>(n)))};
  };
  const auto [c_begin, c_end] = range(W, k.origin_x, k.px_per_col, tex.cols());
  const auto [r_begin, r_end] = range(H, k.origin_y, k.px_per_row, tex.rows());

  Program* current = nullptr;
  glBindVertexArray(vao_.id());
  glBindBuffer(GL_ARRAY_BUFFER, vbo_.id());
  for (const HeatmapTile& t : tex.tiles()) {
    const int64_t ca = std::max(c_begin, t.col0), cb = std::min(c_end, t.col0 + t.cols);
    const int64_t ra = std::max(r_begin, t.row0), rb = std::min(r_end, t.row0 + t.rows);
    if (ca >= cb || ra >= rb) continue;
    const auto sx = [&](int64_t c) { return static_cast<float>(k.origin_x + static_cast<double>(c) * k.px_per_col); };
    const auto sy = [&](int64_t row) { return static_cast<float>(k.origin_y + static_cast<double>(row) * k.px_per_row); };
    const auto u = [&](int64_t c) { return static_cast<float>(c - t.col0); };
    const auto v = [&](int64_t row) { return static_cast<float>(row - t.row0); };
    const float quad[16] = {sx(ca), sy(ra), u(ca), v(ra), sx(cb), sy(ra), u(cb), v(ra),
                            sx(ca), sy(rb), u(ca), v(rb), sx(cb), sy(rb), u(cb), v(rb)};
    glBufferData(GL_ARRAY_BUFFER, sizeof quad, quad, GL_STREAM_DRAW);
    const bool pooling = (pool_x || pool_y) && !t.severity.empty();
    Program& p = program_for(k.mapping.log, k.mapping.signed_log, pooling, k.mapping.split);
    if (&p != current) use(p, k.mapping, ortho, kx, ky, half_x, half_y), current = &p;
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
  glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(previous));
  cache.key = k;
  cache.valid = true;
  ++renders_;
}

}  // namespace ts
