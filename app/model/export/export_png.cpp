#include "app/model/export/export_png.h"

#include <algorithm>

#include "app/model/text_raster.h"

namespace ts {
namespace {

constexpr int kLineGap = 8;

int line_scale(size_t i) { return i == 0 ? kPngTitleScale : kPngLabelScale; }

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

}  // namespace ts
