// What linked heatmap views share: the camera (zoom and pan), the picked cell and the cell
// under the mouse. A panel shows trace | reference | diff with one HeatmapNavigation, so that
// zooming one zooms all three and the same cell is outlined in each. No GL, no ImGui.
#pragma once

#include <cstdint>
#include <optional>

#include "app/gui/heatmap_camera.h"
#include "app/model/float_grid.h"

namespace ts {

struct HeatmapNavigation {
  HeatmapCamera camera;
  std::optional<CellIndex> picked;   // set by a click or the arrow keys; outlined in every view
  std::optional<CellIndex> hovered;  // under the mouse in any of the views, this frame
  std::optional<CellIndex> hover_shown;  // last frame's, outlined by views drawn before the hovered one
  bool square_cells = false;

  // Shape the camera works on and the image size it was last drawn at (pixels).
  int64_t rows = 0, cols = 0;
  double view_w = 0, view_h = 0;

  // Fit on the next prepare(): first show, the Fit button, a new shape. While the user has not
  // zoomed or panned since, the view also refits when its size changes.
  void request_fit() { fit_pending_ = true; }
  bool is_fitted() const { return fitted_; }

  // Called once per frame by the panel, before its views.
  void begin_frame() {
    hover_shown = hovered;
    hovered.reset();
  }
  // Called by each view (all with the same shape and image size) before it handles input.
  void prepare(int64_t rows, int64_t cols, double w, double h);

  // Mouse wheel steps (positive zooms in) around a view point; a drag in pixels.
  void zoom(double wheel_steps, double view_x, double view_y);
  void pan(double dx, double dy);
  // Clicked cell, or nothing (click outside the array keeps the pick).
  void pick(std::optional<CellIndex> cell);
  // Arrow keys: moves the pick (from the top-left cell when there is none), clamped to the
  // array, and pans so that it stays visible.
  void move_pick(int64_t drow, int64_t dcol);

 private:
  bool fit_pending_ = true;
  bool fitted_ = false;
};

// The cell a difference is worst at: NaN first, then the largest |value| (infinities
// included); masked cells are skipped. Nothing for an empty or all-masked grid. Panels pick it
// when they show a new comparison, so the readout starts where the two arrays disagree most.
std::optional<CellIndex> worst_cell(const FloatGrid& diff);

}  // namespace ts
