// A float 2-D array on the GPU: RG32F textures of (value, class) per cell, the class (finite,
// NaN, +Inf, -Inf, masked) decided on the CPU by classify_cell, cut into tiles no larger than
// GL_MAX_TEXTURE_SIZE (or a smaller limit, which the tests use to exercise the tiling).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "app/gui/gl_objects.h"
#include "app/model/float_grid.h"

namespace ts {

struct HeatmapTile {
  int64_t row0 = 0, col0 = 0;  // first cell of the tile
  int64_t rows = 0, cols = 0;
  // RG32F: (value, CellClass as a float); NaN and Inf values stored as 0 (the class says what
  // they are). One fetch per pixel gets both.
  GlTexture cells;
  // NaN / Inf severity of each cell (special_cell_pooling.h); empty when the tile has none.
  std::vector<uint8_t> severity;
  // Max-pooled severity textures (R8UI), made on first use for each (kx, ky).
  mutable std::map<std::pair<int, int>, GlTexture> pooled;

  // The pooled texture for blocks of 2^kx x 2^ky cells (needs the GL context).
  GLuint pooled_severity(int kx, int ky) const;
};

class HeatmapTexture {
 public:
  // Uploads (or re-uploads) `grid`. max_tile_side 0 = the driver's GL_MAX_TEXTURE_SIZE; a
  // larger value is capped to it. Throws GridShapeError for a bad grid, GlError when GL fails.
  void upload(const FloatGridView& grid, int max_tile_side = 0);
  void clear() { tiles_.clear(), rows_ = cols_ = 0, ++generation_; }

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int tile_side() const { return tile_side_; }
  uint64_t generation() const { return generation_; }  // changes with every upload / clear
  const std::vector<HeatmapTile>& tiles() const { return tiles_; }

 private:
  std::vector<HeatmapTile> tiles_;
  int64_t rows_ = 0, cols_ = 0;
  int tile_side_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace ts
