#include "app/model/export/export_png.h"

#include <algorithm>
#include <cmath>

#include "app/model/text_raster.h"

namespace ts {
namespace {

constexpr Rgba8 kMarkLight{255, 255, 255, 255};
constexpr Rgba8 kMarkDark{0, 0, 0, 255};
constexpr int kLineGap = 8;

int line_scale(size_t i) { return i == 0 ? kPngTitleScale : kPngLabelScale; }

// A copy of `image` at least `width` wide (new columns in the background colour).
RgbaImage widened(const RgbaImage& image, int width) {
  if (width <= image.width) return image;
  RgbaImage out(width, image.height, kPngBackground);
  for (int y = 0; y < image.height; ++y)
    std::copy_n(&image.pixels[static_cast<size_t>(y) * static_cast<size_t>(image.width)], image.width, &out.at(0, y));
  return out;
}

}  // namespace

int header_height(const std::vector<std::string>& lines) {
  if (lines.empty()) return 0;
  int h = kPngPad;
  for (size_t i = 0; i < lines.size(); ++i) h += text_height(line_scale(i)) + kLineGap;
  return h;
}

RgbaImage with_header(const RgbaImage& body, const std::vector<std::string>& lines,
                      std::vector<ExportedPanel>& panels) {
  const int top = header_height(lines);
  int width = body.width;
  for (size_t i = 0; i < lines.size(); ++i)
    width = std::max(width, 2 * kPngPad + text_width(lines[i], line_scale(i)));
  RgbaImage out(width, top + body.height, kPngBackground);
  int y = kPngPad;
  for (size_t i = 0; i < lines.size(); ++i) {
    draw_text(out, kPngPad, y, lines[i], i == 0 ? kPngText : kPngDimText, line_scale(i));
    y += text_height(line_scale(i)) + kLineGap;
  }
  for (int r = 0; r < body.height; ++r)
    std::copy_n(&body.pixels[static_cast<size_t>(r) * static_cast<size_t>(body.width)], body.width, &out.at(0, top + r));
  for (ExportedPanel& p : panels) p.y_offset += top;
  return out;
}

int mark_colorbar(RgbaImage& image, const ExportedPanel& panel, float value, const std::string& label) {
  const HeatmapPngLayout& L = panel.layout;
  const ScaleMapping m = scale_mapping(L.scale);
  if (!std::isfinite(value) || L.colorbar_h <= 0) return -1;
  const double t = scale_position(m, value);
  // The bar's row y shows t = 1 - (y + 0.5) / h (heatmap_png.cpp).
  const int bar_x = panel.x_offset + L.colorbar_x, bar_y = panel.y_offset + L.colorbar_y;
  const int y = bar_y + std::clamp(static_cast<int>(std::lround((1.0 - t) * L.colorbar_h - 0.5)), 0, L.colorbar_h - 1);

  // Beside the bar's own labels: the first column right of them that is background all the way.
  int right = bar_x + L.colorbar_w;
  for (int yy = std::max(0, bar_y - 4); yy < std::min(image.height, bar_y + L.colorbar_h + 4); ++yy)
    for (int x = bar_x + L.colorbar_w; x < image.width; ++x)
      if (!(image.at(x, yy) == kPngBackground)) right = std::max(right, x + 1);
  const int text_x = right + 16;
  const int text_h = text_height(kPngLabelScale);
  image = widened(image, text_x + text_width(label, kPngLabelScale) + kPngPad);

  // The mark: white with a dark edge, over the bar and a little beyond it.
  image.fill_rect(bar_x - 6, y - 2, bar_x + L.colorbar_w + 6, y + 3, kMarkDark);
  image.fill_rect(bar_x - 5, y - 1, bar_x + L.colorbar_w + 5, y + 2, kMarkLight);
  // A dotted leader to the label, through background pixels only (never over a bar label).
  for (int x = bar_x + L.colorbar_w + 8; x < text_x - 4; x += 4)
    if (image.at(x, y) == kPngBackground && image.at(x + 1, y) == kPngBackground) {
      image.at(x, y) = kPngDimText;
      image.at(x + 1, y) = kPngDimText;
    }
  draw_text(image, text_x, y - text_h / 2, label, kPngText, kPngLabelScale);
  return y;
}

}  // namespace ts
