// One heatmap on screen: a float array drawn by the GPU shaders from float textures (tiled
// past the GL texture limit), with zoom (mouse wheel, around the cursor), pan (drag with any
// button), fit (double-click), a picked cell (click; the panel moves it with the arrow keys)
// outlined, and numbered axes named by the caller.
//
// A panel shows several views of arrays of one shape side by side (trace | reference | diff)
// with ONE HeatmapNavigation, so they zoom, pan and pick together (synthetic_window.cpp is the
// worked example):
//
//   view.set_data(std::make_shared<FloatGrid>(...));     // when the selected event changes
//   display.fit(grids);                                  // if display.auto_range
//   nav.begin_frame();
//   for each column i:
//     draw_heatmap_controls("id", display_i, grids_i, width);   // colormap, range, sym, log
//     views[i].draw(renderer, nav, display_i, {width, height}); // image, axes, input
//     draw_color_bar(renderer.colormaps(), display_i, views[i].stats(), width);
//   handle_heatmap_keys(nav);                  // arrow keys move the pick, F fits
//   draw_cell_readout(nav, views);             // exact values under the cursor and picked
//
// The view reads exact values from the CPU array (data()), never from the colours.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <imgui.h>

#include "app/gui/heatmap_display.h"
#include "app/gui/heatmap_navigation.h"
#include "app/gui/heatmap_render_cache.h"
#include "app/gui/heatmap_renderer.h"
#include "app/gui/heatmap_texture.h"
#include "app/gui/heatmap_view_layout.h"
#include "app/model/float_grid.h"

namespace ts {

struct HeatmapAxes {
  std::string row_label = "row";     // e.g. "query row"
  std::string col_label = "column";  // e.g. "head-dim column", "keys up to"
  int64_t first_row = 0;             // the numbers given to row 0 and column 0...
  int64_t first_col = 0;
  // ...unless these are given: the number under each row / column (a grid's key positions, the
  // first query of each row block, pooled query rows); an empty list draws no numbers (one
  // column whose label says it all: "keys up to 4095").
  std::optional<std::vector<int64_t>> row_values, col_values;
  // Rows named instead of numbered, one name per row ("b1 h7": a batch and a query head).
  std::optional<std::vector<std::string>> row_names;

  // The number row r / column c is labelled with; nullopt where no numbers are drawn.
  std::optional<int64_t> row_number(int64_t r) const;
  // What row r is labelled with: its name, else its number; nullopt where nothing is drawn.
  std::optional<std::string> row_text(int64_t r) const;
  std::optional<int64_t> col_number(int64_t c) const;
};

// Axes numbered from first_row / first_col.
inline HeatmapAxes numbered_axes(std::string row_label, std::string col_label, int64_t first_row = 0,
                                 int64_t first_col = 0) {
  HeatmapAxes a;
  a.row_label = std::move(row_label);
  a.col_label = std::move(col_label);
  a.first_row = first_row;
  a.first_col = first_col;
  return a;
}

class HeatmapView {
 public:
  explicit HeatmapView(std::string name) : name_(std::move(name)) {}

  // The name identifies the view (ImGui ids, --layout-json); the title above the image is the
  // name unless set.
  const std::string& name() const { return name_; }
  void set_title(std::string title) { title_ = std::move(title); }
  // New data: statistics now, the texture upload at the next draw (GL context current).
  // max_tile_side limits the texture tiles (0 = the GL limit).
  void set_data(std::shared_ptr<const FloatGrid> grid, int max_tile_side = 0);
  const FloatGrid* data() const { return grid_.get(); }
  const ValueStats& stats() const { return stats_; }

  HeatmapAxes axes;

  // Lays the view out over `size` at the cursor (title line, axes, image), handles input into
  // `nav` and queues the image with `renderer`. Throws GlError if the upload fails.
  void draw(HeatmapRenderer& renderer, HeatmapNavigation& nav, const HeatmapDisplay& display, ImVec2 size);

  const HeatmapViewLayout& layout() const { return layout_; }

 private:
  void handle_mouse(HeatmapNavigation& nav, ImVec2 image_min);
  // Returns the row labels drawn (for the layout).
  std::vector<HeatmapViewLayout::RowLabel> draw_axes(ImDrawList* dl, const HeatmapNavigation& nav, ImVec2 image_min,
                                                     ImVec2 image_max) const;
  void draw_marks(ImDrawList* dl, const HeatmapNavigation& nav, ImVec2 image_min, ImVec2 image_max) const;

  std::string name_;
  std::string title_;
  std::shared_ptr<const FloatGrid> grid_;
  ValueStats stats_;
  HeatmapTexture texture_;
  HeatmapRenderCache cache_;
  bool upload_pending_ = false;
  int max_tile_side_ = 0;
  bool dragging_ = false;
  HeatmapViewLayout layout_;
};

// Arrow keys move the picked cell (Shift: by 8), F fits; while no text field has the keyboard
// and the current window (or a child of it) has the focus.
void handle_heatmap_keys(HeatmapNavigation& nav);

// Text turned a quarter anticlockwise, reading upwards, its bounding box's bottom-left corner
// at `bottom_left`.
void add_text_vertical(ImDrawList* dl, ImVec2 bottom_left, ImU32 color, const char* text);

}  // namespace ts
