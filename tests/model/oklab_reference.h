// sRGB (8-bit) -> OKLab lightness, written for the tests independently of colormap.cpp (which
// only converts the other way), to check that the maps' lightness really is monotonic.
#pragma once

#include <cmath>

#include "app/model/colormap.h"

namespace ts::test {

inline double srgb_to_linear(uint8_t v) {
  const double c = v / 255.0;
  return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

inline double oklab_lightness(Rgba8 c) {
  const double r = srgb_to_linear(c.r), g = srgb_to_linear(c.g), b = srgb_to_linear(c.b);
  const double l = std::cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  const double m = std::cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  const double s = std::cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return 0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s;
}

inline double rgb_distance(Rgba8 a, Rgba8 b) {
  const double dr = a.r - b.r, dg = a.g - b.g, db = a.b - b.b;
  return std::sqrt(dr * dr + dg * dg + db * db);
}

}  // namespace ts::test
