// Text for exported images, rasterised on the CPU without a font file: stb_easy_font's
// segment font (Debian's libstb) drawn as solid rectangles and scaled by a whole number, so
// labels stay crisp and legible at any size. Control characters and invalid UTF-8 are drawn as
// escapes (display_text.h), other non-ASCII characters as '?'.
#pragma once

#include <string_view>

#include "app/model/rgba_image.h"

namespace ts {

// Size of `text` (one line) in pixels at `scale` (1 = the font's native 6-7 px letters).
int text_width(std::string_view text, int scale);
int text_height(int scale);

// Draws `text` with its top-left corner at (x, y); clipped to the image.
void draw_text(RgbaImage& image, int x, int y, std::string_view text, Rgba8 color, int scale);

// Draws `text` turned a quarter turn anticlockwise (reading bottom to top), its bounding box's
// top-left corner at (x, y): text_height(scale) wide and text_width(text, scale) tall.
void draw_text_vertical(RgbaImage& image, int x, int y, std::string_view text, Rgba8 color, int scale);

}  // namespace ts
