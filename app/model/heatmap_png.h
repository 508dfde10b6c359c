// Heatmap export: a float 2-D array rendered on the CPU (no GL) with the same colormap and
// special colours as the viewer, a colour bar with its range, axis ticks and labels, a
// title, and a legend counting NaN / +Inf / -Inf / masked cells; written as PNG atomically.
//
//   HeatmapPngOptions opt;
//   opt.title = "splitk.reduce  O - reference";  opt.row_label = "query row";
//   opt.col_label = "head-dim column";  opt.colormap = ColormapId::diverging;
//   opt.scale.symmetric = true;                      // autofit keeps the flags
//   write_heatmap_png("diff.png", {values, rows, cols}, opt);
//
// Small arrays are upscaled (whole pixels per cell, each axis on its own) so that they are
// visible; a cell is never smaller than one pixel, so no NaN is ever averaged away.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/model/colormap.h"
#include "app/model/float_grid.h"
#include "app/model/rgba_image.h"

namespace ts {

struct HeatmapPngOptions {
  std::string title;
  std::string row_label = "row";     // e.g. "query row"
  std::string col_label = "column";  // e.g. "head-dim column", "split", "kv tile"
  int64_t first_row = 0;             // the numbers the tick labels give row 0 and column 0
  int64_t first_col = 0;
  ColormapId colormap = ColormapId::ember;
  ColorScale scale;                  // used as given when autofit is false
  bool autofit = true;               // fit min/max to the finite values (scale's flags kept)
  int min_plot_px = 512;             // upscale until the plot is at least this big...
  int max_cell_px = 48;              // ...with cells at most this big
  int max_image_px = 16384;          // larger arrays are refused: export a slice
  // A labelled line across the colour bar where `value` falls (the tolerance on an error map),
  // its label right of the bar's own labels. Not drawn when the value is not finite or lies
  // outside the bar's range.
  struct ColorbarMark {
    float value = 0.0f;
    std::string label;
  };
  std::optional<ColorbarMark> colorbar_mark;
};

// Where things landed in the image (pixels; for callers that annotate it, and for tests).
struct HeatmapPngLayout {
  int width = 0, height = 0;
  int plot_x = 0, plot_y = 0;  // top-left of cell (0, 0)
  int cell_w = 0, cell_h = 0;
  int colorbar_x = 0, colorbar_y = 0, colorbar_w = 0, colorbar_h = 0;  // top = high end
  ColorScale scale;            // the scale actually used (after autofit)
  // Every text drawn, with its box (x0, y0 inclusive; x1, y1 exclusive): none overlaps another,
  // the plot, the colour bar or the colour bar's mark, whatever the grid's shape.
  struct TextBox {
    std::string text;
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  };
  std::vector<TextBox> texts;
  // The colour bar's mark (HeatmapPngOptions::colorbar_mark) when drawn: `row` is the bar's row at
  // its value, `line` the box of the line across the bar (the label is among `texts`).
  struct ColorbarMark {
    int row = 0;
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  };
  std::optional<ColorbarMark> colorbar_mark;
};

// Throws GridShapeError for a bad grid, ColorScaleError for a bad scale, and
// std::runtime_error (PngWriteError) when the image would exceed max_image_px.
RgbaImage render_heatmap_image(const FloatGridView& grid, const HeatmapPngOptions& options,
                               HeatmapPngLayout* layout = nullptr);

// render_heatmap_image + write_png_file (atomic; FileWriteError names the path and reason).
HeatmapPngLayout write_heatmap_png(const std::filesystem::path& path, const FloatGridView& grid,
                                   const HeatmapPngOptions& options);

}  // namespace ts
