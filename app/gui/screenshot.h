// Reads the rendered frame back from the GL back buffer (before the swap) as an RgbaImage,
// row 0 at the top: what --screenshot writes as PNG.
#pragma once

#include "app/model/rgba_image.h"

namespace ts {

// Alpha is set to 255: the window is opaque whatever the blending left in the alpha channel.
RgbaImage read_back_buffer(int framebuffer_width, int framebuffer_height);

}  // namespace ts
