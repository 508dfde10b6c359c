// CPU text: glyphs land inside the box the metrics promise, and odd bytes are harmless.
#include <gtest/gtest.h>

#include "app/model/text_raster.h"

namespace ts {
namespace {

constexpr Rgba8 kInk{255, 255, 255, 255};
constexpr Rgba8 kPaper{0, 0, 0, 255};

struct InkBox {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
  int count = 0;
};

InkBox ink(const RgbaImage& img) {
  InkBox b;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      if (img.at(x, y) == kInk) {
        b.x0 = std::min(b.x0, x), b.y0 = std::min(b.y0, y), b.x1 = std::max(b.x1, x + 1), b.y1 = std::max(b.y1, y + 1);
        ++b.count;
      }
  return b;
}

TEST(TextRaster, InkStaysInsideTheMeasuredBox) {
  for (int scale : {1, 2, 3}) {
    for (const char* text : {"0123456789", "query row", "-1.234e-05", "Wg|jy_()"}) {
      RgbaImage img(400, 100, kPaper);
      draw_text(img, 10, 20, text, kInk, scale);
      const InkBox b = ink(img);
      ASSERT_GT(b.count, 0) << text;
      EXPECT_GE(b.x0, 10) << text;
      EXPECT_GE(b.y0, 20) << text;
      EXPECT_LE(b.x1, 10 + text_width(text, scale)) << text << " scale " << scale;
      EXPECT_LE(b.y1, 20 + text_height(scale)) << text << " scale " << scale;
      EXPECT_GE(b.x1, 10 + text_width(text, scale) - 3 * scale) << "the width is not padded";
    }
  }
}

TEST(TextRaster, VerticalTextIsTheSameInkTurned) {
  RgbaImage flat(200, 60, kPaper), turned(60, 200, kPaper);
  draw_text(flat, 0, 0, "m and l", kInk, 2);
  draw_text_vertical(turned, 0, 0, "m and l", kInk, 2);
  const int w = text_width("m and l", 2);
  for (int y = 0; y < text_height(2); ++y)
    for (int x = 0; x < w; ++x) ASSERT_EQ(flat.at(x, y), turned.at(y, w - 1 - x)) << x << "," << y;
}

TEST(TextRaster, NonAsciiAndClippedTextAreHarmless) {
  RgbaImage img(30, 10, kPaper);
  draw_text(img, -5, -3, "\x01\xff\x7f tail beyond the edge \xc3\xa9", kInk, 3);
  draw_text_vertical(img, 25, 5, "\n\t", kInk, 2);
  EXPECT_GT(ink(img).count, 0);
  EXPECT_EQ(text_width("", 2), 0);
}

TEST(TextRaster, ControlCharactersFromFilesAreDrawnAsTheirEscapes) {
  // Labels quote file contents: an escape sequence is shown written out (display_text.h), the
  // same as every other place that shows text from a file.
  const std::string raw = "gpu\x1b[2J\x07", shown = "gpu\\x1b[2J\\x07";
  EXPECT_EQ(text_width(raw, 2), text_width(shown, 2));
  RgbaImage a(200, 20, kPaper), b(200, 20, kPaper);
  draw_text(a, 1, 1, raw, kInk, 2);
  draw_text(b, 1, 1, shown, kInk, 2);
  EXPECT_TRUE(a.pixels == b.pixels);
}

}  // namespace
}  // namespace ts
