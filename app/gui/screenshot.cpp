#include "app/gui/screenshot.h"

#include <algorithm>

#include "app/gui/gl_api.h"

namespace ts {

RgbaImage read_back_buffer(int w, int h) {
  RgbaImage img(w, h);
  glFinish();
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glPixelStorei(GL_PACK_ROW_LENGTH, 0);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, img.pixels.data());
  if (const GLenum err = glGetError(); err != GL_NO_ERROR)
    throw GlError("reading the frame back failed (GL error " + std::to_string(err) + ")");
  // GL's rows run bottom-up.
  for (int y = 0; y < h / 2; ++y)
    std::swap_ranges(img.pixels.begin() + static_cast<std::ptrdiff_t>(y) * w,
                     img.pixels.begin() + static_cast<std::ptrdiff_t>(y + 1) * w,
                     img.pixels.begin() + static_cast<std::ptrdiff_t>(h - 1 - y) * w);
  for (Rgba8& p : img.pixels) p.a = 255;
  return img;
}

}  // namespace ts
