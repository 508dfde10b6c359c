#include "app/gui/heatmap_camera.h"

#include <algorithm>
#include <cmath>

namespace ts {
namespace {
constexpr double kMinFactorOfFit = 0.125;  // zoom out to an eighth of "fit", no further
}

std::optional<CellIndex> HeatmapCamera::cell_at(double vx, double vy, int64_t rows, int64_t cols) const {
  const double c = std::floor(col_at(vx)), r = std::floor(row_at(vy));
  if (!(c >= 0 && r >= 0 && c < static_cast<double>(cols) && r < static_cast<double>(rows))) return std::nullopt;
  return CellIndex{static_cast<int64_t>(r), static_cast<int64_t>(c)};
}

void HeatmapCamera::fit(int64_t rows, int64_t cols, double w, double h, bool square_cells) {
  if (rows <= 0 || cols <= 0 || !(w > 0) || !(h > 0)) return;
  px_per_col = w / static_cast<double>(cols);
  px_per_row = h / static_cast<double>(rows);
  if (square_cells) px_per_col = px_per_row = std::min(px_per_col, px_per_row);
  px_per_col = std::min(px_per_col, kMaxPxPerCell);
  px_per_row = std::min(px_per_row, kMaxPxPerCell);
  // Centre the array: the top-left corner sits half the spare room before cell 0.
  col0 = -(w / px_per_col - static_cast<double>(cols)) / 2.0;
  row0 = -(h / px_per_row - static_cast<double>(rows)) / 2.0;
}

double HeatmapCamera::zoom_at(double factor, double vx, double vy, int64_t rows, int64_t cols, double w, double h) {
  if (!(factor > 0) || rows <= 0 || cols <= 0 || !(w > 0) || !(h > 0)) return 1.0;
  const double fit_col = w / static_cast<double>(cols), fit_row = h / static_cast<double>(rows);
  // Out: stop once both axes are below an eighth of their fit. In: go on while either axis is
  // under the cap (an 8192-row array needs its rows magnified far more than its columns);
  // the axis at the cap stays there.
  const double lo = std::min(kMinFactorOfFit * fit_col / px_per_col, kMinFactorOfFit * fit_row / px_per_row);
  const double hi = std::max(kMaxPxPerCell / px_per_col, kMaxPxPerCell / px_per_row);
  factor = std::clamp(factor, std::min(lo, 1.0), std::max(hi, 1.0));
  const double col = col_at(vx), row = row_at(vy);
  px_per_col = std::min(px_per_col * factor, std::max(kMaxPxPerCell, px_per_col));
  px_per_row = std::min(px_per_row * factor, std::max(kMaxPxPerCell, px_per_row));
  col0 = col - vx / px_per_col;
  row0 = row - vy / px_per_row;
  return factor;
}

void HeatmapCamera::keep_in_view(int64_t rows, int64_t cols, double w, double h, double margin_px) {
  // The array's extent in view pixels must overlap [margin, w - margin] on each axis.
  const double left = view_x(0), right = view_x(static_cast<double>(cols));
  const double top = view_y(0), bottom = view_y(static_cast<double>(rows));
  const double mx = std::min(margin_px, (right - left) / 2), my = std::min(margin_px, (bottom - top) / 2);
  if (right < mx) pan_pixels(mx - right, 0);
  if (left > w - mx) pan_pixels((w - mx) - left, 0);
  if (bottom < my) pan_pixels(0, my - bottom);
  if (top > h - my) pan_pixels(0, (h - my) - top);
}

void HeatmapCamera::reveal(CellIndex cell, double w, double h) {
  // Per axis: no move when the cell is inside; else the least pan that brings it in; a cell
  // larger than the view is centred.
  auto shift = [](double a, double b, double size) {
    if (b - a > size) return size / 2 - (a + b) / 2;
    if (a < 0) return -a;
    if (b > size) return size - b;
    return 0.0;
  };
  pan_pixels(shift(view_x(static_cast<double>(cell.col)), view_x(static_cast<double>(cell.col + 1)), w),
             shift(view_y(static_cast<double>(cell.row)), view_y(static_cast<double>(cell.row + 1)), h));
}

}  // namespace ts
