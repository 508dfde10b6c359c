#include "app/gui/heatmap_export.h"

#include <utility>

namespace ts {

HeatmapPngOptions png_options_for(const HeatmapView& view, const HeatmapDisplay& display, std::string title) {
  HeatmapPngOptions opt;
  opt.title = std::move(title);
  opt.row_label = view.axes.row_label;
  opt.col_label = view.axes.col_label;
  opt.first_row = view.axes.first_row;
  opt.first_col = view.axes.first_col;
  opt.colormap = display.colormap;
  opt.scale = display.scale;
  opt.autofit = false;  // exactly the range on screen
  return opt;
}

HeatmapPngLayout export_view_png(const std::filesystem::path& path, const HeatmapView& view,
                                 const HeatmapDisplay& display, std::string title) {
  if (!view.data()) throw GridShapeError("the '" + view.name() + "' view has no data to export");
  return write_heatmap_png(path, view.data()->view(), png_options_for(view, display, std::move(title)));
}

}  // namespace ts
