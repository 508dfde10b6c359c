// Zoom and pan of a heatmap: the map between a view's pixels and cell coordinates. No GL, no
// ImGui, so the interaction maths is unit-tested on the CPU.
//
// View pixels have their origin at the image region's top-left corner, x to the right and y
// down. Cell coordinates are (column, row) as real numbers: cell (r, c) covers
// [c, c + 1) x [r, r + 1). Rows and columns scale separately, because attention arrays are far
// from square (8192 query rows x 128 head-dim columns); `square_cells` in fit() keeps them equal.
#pragma once

#include <cstdint>
#include <optional>

namespace ts {

struct CellIndex {
  int64_t row = 0;
  int64_t col = 0;
  friend bool operator==(const CellIndex&, const CellIndex&) = default;
};

class HeatmapCamera {
 public:
  static constexpr double kMaxPxPerCell = 512.0;

  double col0 = 0.0, row0 = 0.0;            // cell coordinate at the view's top-left corner
  double px_per_col = 1.0, px_per_row = 1.0;

  double view_x(double col) const { return (col - col0) * px_per_col; }
  double view_y(double row) const { return (row - row0) * px_per_row; }
  double col_at(double view_x) const { return col0 + view_x / px_per_col; }
  double row_at(double view_y) const { return row0 + view_y / px_per_row; }

  // The cell under a view pixel, or nothing outside the array.
  std::optional<CellIndex> cell_at(double view_x, double view_y, int64_t rows, int64_t cols) const;

  // Whole array in a w x h view, centred; stretched per axis unless square_cells.
  void fit(int64_t rows, int64_t cols, double w, double h, bool square_cells);

  // Scales both axes by `factor` keeping the point (view_x, view_y) on the same cell. Zooming
  // out stops at an eighth of what fit() gives; no axis grows past kMaxPxPerCell. Returns the
  // factor applied.
  double zoom_at(double factor, double view_x, double view_y, int64_t rows, int64_t cols, double w, double h);

  void pan_pixels(double dx, double dy) {
    col0 -= dx / px_per_col;
    row0 -= dy / px_per_row;
  }

  // Keeps at least `margin_px` of the array inside the view (it cannot be lost off-screen).
  void keep_in_view(int64_t rows, int64_t cols, double w, double h, double margin_px = 32.0);

  // Pans as little as possible so that the whole cell is visible (centred if it is larger
  // than the view).
  void reveal(CellIndex cell, double w, double h);
};

}  // namespace ts
