// An 8-bit RGBA image in memory, row 0 at the top: what PNG export renders into and what the
// GUI's screenshot reads back into.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/model/colormap.h"

namespace ts {

struct RgbaImage {
  int width = 0;
  int height = 0;
  std::vector<Rgba8> pixels;  // width * height, row-major

  RgbaImage() = default;
  RgbaImage(int w, int h, Rgba8 fill = {0, 0, 0, 255}) : width(w), height(h) {
    if (w < 0 || h < 0) throw std::invalid_argument("negative image size");
    pixels.assign(static_cast<size_t>(w) * static_cast<size_t>(h), fill);
  }

  bool contains(int x, int y) const { return x >= 0 && y >= 0 && x < width && y < height; }
  Rgba8& at(int x, int y) { return pixels[static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)]; }
  const Rgba8& at(int x, int y) const {
    return pixels[static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)];
  }

  // Fills [x0, x1) x [y0, y1), clipped to the image.
  void fill_rect(int x0, int y0, int x1, int y1, Rgba8 c) {
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > width ? width : x1;
    y1 = y1 > height ? height : y1;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) at(x, y) = c;
  }
};

}  // namespace ts
