#include "app/gui/heatmap_texture.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app/gui/special_cell_pooling.h"
#include "app/model/colormap.h"

namespace ts {
namespace {

void set_nearest(GLenum target) {
  glTexParameteri(target, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(target, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(target, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(target, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glTexParameteri(target, GL_TEXTURE_BASE_LEVEL, 0);
  glTexParameteri(target, GL_TEXTURE_MAX_LEVEL, 0);
}

}  // namespace

GLuint HeatmapTile::pooled_severity(int kx, int ky) const {
  GlTexture& tex = pooled[{kx, ky}];
  if (!tex) {
    const PooledSeverity p = max_pool_severity(severity, rows, cols, kx, ky);
    tex = GlTexture::create();
    glBindTexture(GL_TEXTURE_2D, tex.id());
    set_nearest(GL_TEXTURE_2D);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R8UI, static_cast<GLsizei>(p.cols), static_cast<GLsizei>(p.rows), 0,
                 GL_RED_INTEGER, GL_UNSIGNED_BYTE, p.values.data());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  }
  return tex.id();
}

void HeatmapTexture::upload(const FloatGridView& grid, int max_tile_side) {
  grid.validate();
  GLint gl_max = 0;
  glGetIntegerv(GL_MAX_TEXTURE_SIZE, &gl_max);
  if (gl_max <= 0) throw GlError("GL reports no usable texture size (is a GL context current?)");
  tile_side_ = max_tile_side > 0 ? std::min(max_tile_side, static_cast<int>(gl_max)) : static_cast<int>(gl_max);
  const int64_t side = tile_side_;

  while (glGetError() != GL_NO_ERROR) {  // report only what this upload causes
  }
  tiles_.clear();
  ++generation_;
  rows_ = grid.rows;
  cols_ = grid.cols;
  std::vector<float> cells;  // (value, class) pairs
  std::vector<uint8_t> classes;
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  for (int64_t r0 = 0; r0 < grid.rows; r0 += side) {
    for (int64_t c0 = 0; c0 < grid.cols; c0 += side) {
      HeatmapTile t;
      t.row0 = r0;
      t.col0 = c0;
      t.rows = std::min(side, grid.rows - r0);
      t.cols = std::min(side, grid.cols - c0);
      // Classify on the CPU and give the GPU only finite values.
      classes.resize(static_cast<size_t>(t.rows * t.cols));
      cells.resize(2 * classes.size());
      bool special = false;
      for (int64_t r = 0; r < t.rows; ++r)
        for (int64_t c = 0; c < t.cols; ++c) {
          const float v = grid.at(r0 + r, c0 + c);
          const CellClass k = classify_cell(v, grid.absent(r0 + r, c0 + c));
          const size_t i = static_cast<size_t>(r * t.cols + c);
          classes[i] = static_cast<uint8_t>(k);
          cells[2 * i] = std::isfinite(v) ? v : 0.0f;
          cells[2 * i + 1] = static_cast<float>(k);
          special |= special_severity(k) != 0;
        }
      if (special) {
        t.severity.resize(classes.size());
        for (size_t i = 0; i < classes.size(); ++i) t.severity[i] = special_severity(static_cast<CellClass>(classes[i]));
      }
      const auto w = static_cast<GLsizei>(t.cols), h = static_cast<GLsizei>(t.rows);
      t.cells = GlTexture::create();
      glBindTexture(GL_TEXTURE_2D, t.cells.id());
      set_nearest(GL_TEXTURE_2D);
      glTexImage2D(GL_TEXTURE_2D, 0, GL_RG32F, w, h, 0, GL_RG, GL_FLOAT, cells.data());
      tiles_.push_back(std::move(t));
    }
  }
  glBindTexture(GL_TEXTURE_2D, 0);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  if (const GLenum err = glGetError(); err != GL_NO_ERROR) {
    tiles_.clear();
    throw GlError("uploading a " + std::to_string(grid.rows) + " x " + std::to_string(grid.cols) +
                  " heatmap failed (GL error 0x" + [&] {
                    char hex[16];
                    std::snprintf(hex, sizeof hex, "%x", err);
                    return std::string(hex);
                  }() + "; out of GPU memory?)");
  }
}

}  // namespace ts
