#include "app/model/text_raster.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <stb_easy_font.h>

#include "instrumentation/trace/display_text.h"

namespace ts {
namespace {

// What the font can draw: control characters and invalid UTF-8 written out as escapes
// (display_text.h: labels may quote file contents), then every byte stb_easy_font has no glyph
// for (it indexes a table with char - 32) as '?'.
std::string font_text(std::string_view text) {
  std::string s = printable(text);
  for (char& c : s)
    if (c < 32 || c > 126) c = '?';
  return s;
}

struct Quad {
  int x0, y0, x1, y1;  // [x0, x1) x [y0, y1) in font units
};

std::vector<Quad> glyph_quads(std::string_view text) {
  std::string s = font_text(text);
  // Each character draws at most a dozen segments of 4 vertices x 16 bytes.
  std::vector<char> buffer(s.size() * 1024 + 64);
  const int count = stb_easy_font_print(0, 0, s.data(), nullptr, buffer.data(), static_cast<int>(buffer.size()));
  std::vector<Quad> quads;
  quads.reserve(static_cast<size_t>(count));
  for (int q = 0; q < count; ++q) {
    float xs[4], ys[4];
    for (int v = 0; v < 4; ++v) {
      const char* vertex = buffer.data() + (q * 4 + v) * 16;
      std::memcpy(&xs[v], vertex, sizeof(float));
      std::memcpy(&ys[v], vertex + 4, sizeof(float));
    }
    quads.push_back({static_cast<int>(std::lround(std::min(xs[0], xs[2]))), static_cast<int>(std::lround(std::min(ys[0], ys[2]))),
                     static_cast<int>(std::lround(std::max(xs[0], xs[2]))), static_cast<int>(std::lround(std::max(ys[0], ys[2])))});
  }
  return quads;
}

}  // namespace

int text_width(std::string_view text, int scale) {
  std::string s = printable(text);
  // The font's advance leaves one blank column after the last letter: not part of the text.
  const int w = stb_easy_font_width(s.data());
  return (w > 0 ? w - 1 : 0) * scale;
}

int text_height(int scale) { return 9 * scale; }  // ascenders at 0, descenders to 9

void draw_text(RgbaImage& image, int x, int y, std::string_view text, Rgba8 color, int scale) {
  for (const Quad& q : glyph_quads(text))
    image.fill_rect(x + q.x0 * scale, y + q.y0 * scale, x + q.x1 * scale, y + q.y1 * scale, color);
}

void draw_text_vertical(RgbaImage& image, int x, int y, std::string_view text, Rgba8 color, int scale) {
  // Font space (u right, v down) -> image: u runs up from the bottom, v runs right.
  const int w = text_width(text, scale);
  for (const Quad& q : glyph_quads(text))
    image.fill_rect(x + q.y0 * scale, y + w - q.x1 * scale, x + q.y1 * scale, y + w - q.x0 * scale, color);
}

}  // namespace ts
