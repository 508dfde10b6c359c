#include "app/gui/heatmap_navigation.h"

#include <algorithm>
#include <cmath>

namespace ts {

void HeatmapNavigation::prepare(int64_t r, int64_t c, double w, double h) {
  const bool new_shape = r != rows || c != cols;
  const bool new_size = w != view_w || h != view_h;
  rows = r;
  cols = c;
  view_w = w;
  view_h = h;
  if (new_shape && picked && (picked->row >= rows || picked->col >= cols)) picked.reset();
  if (fit_pending_ || new_shape || (fitted_ && new_size)) {
    camera.fit(rows, cols, w, h, square_cells);
    fit_pending_ = false;
    fitted_ = true;
  }
}

void HeatmapNavigation::zoom(double wheel_steps, double vx, double vy) {
  if (wheel_steps == 0) return;
  camera.zoom_at(std::pow(1.25, wheel_steps), vx, vy, rows, cols, view_w, view_h);
  camera.keep_in_view(rows, cols, view_w, view_h);
  fitted_ = false;
}

void HeatmapNavigation::pan(double dx, double dy) {
  if (dx == 0 && dy == 0) return;
  camera.pan_pixels(dx, dy);
  camera.keep_in_view(rows, cols, view_w, view_h);
  fitted_ = false;
}

void HeatmapNavigation::pick(std::optional<CellIndex> cell) {
  if (cell) picked = cell;
}

void HeatmapNavigation::move_pick(int64_t drow, int64_t dcol) {
  if (rows <= 0 || cols <= 0) return;
  CellIndex p = picked.value_or(CellIndex{0, 0});
  if (picked) {
    p.row = std::clamp<int64_t>(p.row + drow, 0, rows - 1);
    p.col = std::clamp<int64_t>(p.col + dcol, 0, cols - 1);
  }
  picked = p;
  camera.reveal(p, view_w, view_h);
}

std::optional<CellIndex> worst_cell(const FloatGrid& diff) {
  const FloatGridView v = diff.view();
  std::optional<CellIndex> worst;
  // Ordered by (NaN, then |x|): NaN is where a kernel is most wrong.
  bool worst_nan = false;
  float worst_abs = -1;
  for (int64_t r = 0; r < v.rows; ++r)
    for (int64_t c = 0; c < v.cols; ++c) {
      if (v.masked(r, c)) continue;
      const float x = v.at(r, c);
      const bool nan = std::isnan(x);
      const float a = nan ? 0.0f : std::abs(x);
      if (worst_nan && !nan) continue;
      if ((nan && !worst_nan) || a > worst_abs) worst_nan = nan, worst_abs = a, worst = CellIndex{r, c};
    }
  return worst;
}

}  // namespace ts
