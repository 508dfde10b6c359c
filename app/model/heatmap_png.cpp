#include "app/model/heatmap_png.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "app/model/axis_ticks.h"
#include "app/model/png_file.h"
#include "app/model/png_theme.h"
#include "app/model/text_raster.h"

namespace ts {
namespace {

constexpr Rgba8 kFrame{110, 114, 122, 255};
constexpr Rgba8 kMarkLight{255, 255, 255, 255};
constexpr Rgba8 kMarkDark{0, 0, 0, 255};

constexpr int kTickLen = 5;
constexpr int kColorbarW = 22;
constexpr int kColorbarMinH = 200;

std::string format_value(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

std::string scale_description(ColormapId id, const ColorScale& s, int64_t rows, int64_t cols) {
  std::string kind = s.log ? (s.symmetric ? "signed log" : "log |x|") : (s.symmetric ? "symmetric" : "linear");
  if (s.log) kind += " (floor " + format_value(s.log_floor) + ")";
  if (s.split) kind += ", split at " + format_value(s.split_at);
  return std::to_string(rows) + " x " + std::to_string(cols) + " cells   " + std::string(colormap_name(id)) + ", " +
         kind;
}

// The value at the colour bar's middle, for its centre label.
double middle_value(const ColorScale& s) {
  if (s.split) return s.split_at;  // each half spans its side of the threshold
  const ScaleEnds ends = scale_ends(s);
  if (s.log && s.symmetric) return 0.0;
  if (s.log) return std::sqrt(static_cast<double>(ends.low) * ends.high);  // geometric mean
  return 0.5 * (static_cast<double>(ends.low) + ends.high);
}

// The colour bar's row (from its top) where `value` falls, or none when the value is not finite or
// lies outside the bar's range: row y shows t = 1 - (y + 0.5) / h.
std::optional<int> colorbar_row(const ColorScale& scale, int bar_h, float value) {
  const ScaleEnds ends = scale_ends(scale);
  if (!std::isfinite(value) || value < ends.low || value > ends.high) return std::nullopt;
  const double t = scale_position(scale_mapping(scale), value);
  return std::clamp(static_cast<int>(std::lround((1.0 - t) * bar_h - 0.5)), 0, bar_h - 1);
}

int cells_px(int64_t count, int min_plot_px, int max_cell_px) {
  const int64_t want = (min_plot_px + count - 1) / count;
  return static_cast<int>(std::clamp<int64_t>(want, 1, std::max(1, max_cell_px)));
}

}  // namespace

RgbaImage render_heatmap_image(const FloatGridView& grid, const HeatmapPngOptions& opt, HeatmapPngLayout* out) {
  grid.validate();
  const ColorScale scale = opt.autofit ? autofit(grid.values, opt.scale, grid.mask) : opt.scale;
  const ColorMapper mapper(opt.colormap, scale);  // validates the scale
  const ValueStats stats = value_stats(grid.values, grid.mask);

  HeatmapPngLayout L;
  L.scale = scale;
  L.cell_w = cells_px(grid.cols, opt.min_plot_px, opt.max_cell_px);
  L.cell_h = cells_px(grid.rows, opt.min_plot_px, opt.max_cell_px);
  const int64_t plot_w64 = grid.cols * L.cell_w, plot_h64 = grid.rows * L.cell_h;
  if (plot_w64 > opt.max_image_px || plot_h64 > opt.max_image_px)
    throw PngWriteError("a " + std::to_string(grid.rows) + " x " + std::to_string(grid.cols) +
                        " heatmap needs an image over " + std::to_string(opt.max_image_px) +
                        " pixels on a side at one pixel per cell; export a slice of it");
  const int plot_w = static_cast<int>(plot_w64), plot_h = static_cast<int>(plot_h64);

  // Tick labels decide the left margin.
  const int label_h = text_height(kPngLabelScale);
  // Ticks fall on round numbers of the caller's numbering (first_row, first_col), then shift back.
  std::vector<int64_t> row_ticks = axis_ticks(opt.first_row, opt.first_row + grid.rows, L.cell_h, label_h + 12);
  for (int64_t& t : row_ticks) t -= opt.first_row;
  int row_label_w = 0;
  for (int64_t t : row_ticks) row_label_w = std::max(row_label_w, text_width(std::to_string(opt.first_row + t), kPngLabelScale));
  const int widest_col = text_width(std::to_string(opt.first_col + grid.cols - 1), kPngLabelScale);
  std::vector<int64_t> col_ticks = axis_ticks(opt.first_col, opt.first_col + grid.cols, L.cell_w, widest_col + 18);
  for (int64_t& t : col_ticks) t -= opt.first_col;

  const int title_h = opt.title.empty() ? 0 : text_height(kPngTitleScale) + 10;
  const int subtitle_h = label_h + 16;
  L.plot_x = kPngPad + label_h + 12 + row_label_w + 6 + kTickLen;
  L.plot_y = kPngPad + title_h + subtitle_h;

  const std::string subtitle = scale_description(opt.colormap, scale, grid.rows, grid.cols);
  const int x_ticks_y = L.plot_y + plot_h + kTickLen + 4;
  const int x_label_y = x_ticks_y + label_h + 10;
  const int col_label_len = text_width(opt.col_label, kPngLabelScale);
  const int col_label_x = L.plot_x + std::max(0, (plot_w - col_label_len) / 2);
  // The colour bar stands right of everything under the plot (the column numbers and the column
  // label, which a plot narrower than its label overhangs): it is taller than a short plot, and
  // would otherwise reach down into them.
  int under_plot_right = std::max(L.plot_x + plot_w, col_label_x + col_label_len);
  for (int64_t t : col_ticks) {
    const int x = L.plot_x + static_cast<int>(t) * L.cell_w + L.cell_w / 2;
    const int w = text_width(std::to_string(opt.first_col + t), kPngLabelScale);
    under_plot_right = std::max(under_plot_right, x - w / 2 + w);
  }
  L.colorbar_x = under_plot_right + 28;
  L.colorbar_y = L.plot_y;
  L.colorbar_w = kColorbarW;
  L.colorbar_h = std::max(plot_h, kColorbarMinH);

  const ScaleEnds ends = scale_ends(scale);
  const std::array<std::string, 3> bar_labels = {format_value(ends.high), format_value(middle_value(scale)),
                                                 format_value(ends.low)};
  int bar_label_w = 0;
  for (const auto& s : bar_labels) bar_label_w = std::max(bar_label_w, text_width(s, kPngLabelScale));
  const int bar_text_x = L.colorbar_x + L.colorbar_w + 8;
  // The mark: a line over the bar and 6 pixels either side (short of the bar's labels, 8 right of
  // it), its label in a column right of those labels, level with the line and within the bar's
  // height (the scale line is above it, the legend below).
  int mark_text_x = 0, mark_text_y = 0;
  if (opt.colorbar_mark)
    if (const std::optional<int> row = colorbar_row(scale, L.colorbar_h, opt.colorbar_mark->value)) {
      const int y = L.colorbar_y + *row;
      L.colorbar_mark = HeatmapPngLayout::ColorbarMark{y, L.colorbar_x - 6, y - 2, L.colorbar_x + L.colorbar_w + 6, y + 3};
      mark_text_x = bar_text_x + bar_label_w + 16;
      mark_text_y = std::clamp(y - label_h / 2, L.colorbar_y, L.colorbar_y + L.colorbar_h - label_h);
    }
  const int mark_text_w = L.colorbar_mark ? text_width(opt.colorbar_mark->label, kPngLabelScale) : 0;

  struct LegendEntry {
    CellClass cls;
    std::string text;
    size_t count;
  };
  std::vector<LegendEntry> legend;
  int legend_w = 0;
  // NaN, +Inf, -Inf and masked always (a zero is evidence too); the other absent kinds where
  // the picture has some (an export is never pending).
  for (const CellClass cls : {CellClass::nan, CellClass::pos_inf, CellClass::neg_inf, CellClass::masked,
                              CellClass::never_written, CellClass::not_traced, CellClass::pending}) {
    const size_t count = stats.count(cls);
    const bool always = cls == CellClass::nan || cls == CellClass::pos_inf || cls == CellClass::neg_inf ||
                        cls == CellClass::masked;
    if (!always && count == 0) continue;
    legend.push_back({cls, std::string(cell_class_name(cls)) + " " + std::to_string(count), count});
    legend_w += label_h + 6 + text_width(legend.back().text, kPngLabelScale) + 22;
  }

  // The row label runs down the left edge from the plot's top (centred on a plot taller than it):
  // the legend goes below it too.
  const int row_label_len = text_width(opt.row_label, kPngLabelScale);
  const int row_label_y = L.plot_y + std::max(0, (plot_h - row_label_len) / 2);
  const int legend_y =
      std::max({x_label_y + label_h + 16, L.colorbar_y + L.colorbar_h + label_h, row_label_y + row_label_len + 8});
  L.width = std::max({bar_text_x + bar_label_w + kPngPad, mark_text_x + mark_text_w + kPngPad,
                      kPngPad + text_width(opt.title, kPngTitleScale) + kPngPad, kPngPad + text_width(subtitle, kPngLabelScale) + kPngPad,
                      col_label_x + col_label_len + kPngPad, L.plot_x + legend_w + kPngPad});
  L.height = legend_y + label_h + kPngPad;

  RgbaImage img(L.width, L.height, kPngBackground);
  const auto text = [&](int x, int y, const std::string& s, Rgba8 color, int text_scale) {
    draw_text(img, x, y, s, color, text_scale);
    L.texts.push_back({s, x, y, x + text_width(s, text_scale), y + text_height(text_scale)});
  };

  // Title and the scale line under it.
  if (!opt.title.empty()) text(kPngPad, kPngPad, opt.title, kPngText, kPngTitleScale);
  text(kPngPad, kPngPad + title_h, subtitle, kPngDimText, kPngLabelScale);

  // Cells.
  for (int64_t r = 0; r < grid.rows; ++r)
    for (int64_t c = 0; c < grid.cols; ++c) {
      const int x = L.plot_x + static_cast<int>(c) * L.cell_w, y = L.plot_y + static_cast<int>(r) * L.cell_h;
      img.fill_rect(x, y, x + L.cell_w, y + L.cell_h, mapper(grid.at(r, c), grid.absent(r, c)));
    }
  // Frame one pixel outside the plot, so edge cells keep their full size.
  img.fill_rect(L.plot_x - 1, L.plot_y - 1, L.plot_x + plot_w + 1, L.plot_y, kFrame);
  img.fill_rect(L.plot_x - 1, L.plot_y + plot_h, L.plot_x + plot_w + 1, L.plot_y + plot_h + 1, kFrame);
  img.fill_rect(L.plot_x - 1, L.plot_y, L.plot_x, L.plot_y + plot_h, kFrame);
  img.fill_rect(L.plot_x + plot_w, L.plot_y, L.plot_x + plot_w + 1, L.plot_y + plot_h, kFrame);

  // Row axis: ticks at cell centres, numbers right-aligned, the label turned up the side.
  for (int64_t t : row_ticks) {
    const int y = L.plot_y + static_cast<int>(t) * L.cell_h + L.cell_h / 2;
    img.fill_rect(L.plot_x - 1 - kTickLen, y, L.plot_x - 1, y + 1, kFrame);
    const std::string s = std::to_string(opt.first_row + t);
    text(L.plot_x - 1 - kTickLen - 6 - text_width(s, kPngLabelScale), y - label_h / 2, s, kPngText, kPngLabelScale);
  }
  draw_text_vertical(img, kPngPad, row_label_y, opt.row_label, kPngDimText, kPngLabelScale);
  L.texts.push_back({opt.row_label, kPngPad, row_label_y, kPngPad + label_h, row_label_y + row_label_len});

  // Column axis.
  for (int64_t t : col_ticks) {
    const int x = L.plot_x + static_cast<int>(t) * L.cell_w + L.cell_w / 2;
    img.fill_rect(x, L.plot_y + plot_h + 1, x + 1, L.plot_y + plot_h + 1 + kTickLen, kFrame);
    const std::string s = std::to_string(opt.first_col + t);
    text(x - text_width(s, kPngLabelScale) / 2, x_ticks_y, s, kPngText, kPngLabelScale);
  }
  text(col_label_x, x_label_y, opt.col_label, kPngDimText, kPngLabelScale);

  // Colour bar: the table from high (top) to low, with its range.
  const ColormapTable& table = colormap_table(opt.colormap);
  for (int y = 0; y < L.colorbar_h; ++y) {
    const double t = 1.0 - (y + 0.5) / L.colorbar_h;
    const size_t index = std::min<size_t>(static_cast<size_t>(t * 256.0), 255);
    img.fill_rect(L.colorbar_x, L.colorbar_y + y, L.colorbar_x + L.colorbar_w, L.colorbar_y + y + 1, table[index]);
  }
  const std::array<int, 3> bar_label_y = {L.colorbar_y, L.colorbar_y + L.colorbar_h / 2 - label_h / 2,
                                          L.colorbar_y + L.colorbar_h - label_h};
  for (size_t i = 0; i < bar_labels.size(); ++i) text(bar_text_x, bar_label_y[i], bar_labels[i], kPngText, kPngLabelScale);
  if (const auto& m = L.colorbar_mark) {
    // White with a dark edge, and a dotted leader to the label through background pixels only
    // (never over a bar label).
    img.fill_rect(m->x0, m->y0, m->x1, m->y1, kMarkDark);
    img.fill_rect(m->x0 + 1, m->y0 + 1, m->x1 - 1, m->y1 - 1, kMarkLight);
    for (int x = m->x1 + 2; x < mark_text_x - 4; x += 4)
      if (img.at(x, m->row) == kPngBackground && img.at(x + 1, m->row) == kPngBackground) {
        img.at(x, m->row) = kPngDimText;
        img.at(x + 1, m->row) = kPngDimText;
      }
    text(mark_text_x, mark_text_y, opt.colorbar_mark->label, kPngText, kPngLabelScale);
  }

  // Legend: every special colour with its count (a zero is evidence too).
  int x = L.plot_x;
  for (const auto& [cls, entry_text, count] : legend) {
    img.fill_rect(x, legend_y, x + label_h, legend_y + label_h, special_color(cls));
    text(x + label_h + 6, legend_y, entry_text, count ? kPngText : kPngDimText, kPngLabelScale);
    x += label_h + 6 + text_width(entry_text, kPngLabelScale) + 22;
  }

  if (out) *out = L;
  return img;
}

HeatmapPngLayout write_heatmap_png(const std::filesystem::path& path, const FloatGridView& grid,
                                   const HeatmapPngOptions& options) {
  HeatmapPngLayout layout;
  const RgbaImage image = render_heatmap_image(grid, options, &layout);
  write_png_file(path, image);
  return layout;
}

}  // namespace ts
