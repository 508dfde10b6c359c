// The colormap tables as 256 x 1 RGBA8 textures (nearest filtering): the heatmap shader looks
// colours up in them, and the colour bar draws them. Same bytes as colormap_table().
#pragma once

#include <array>

#include "app/gui/gl_objects.h"
#include "app/model/colormap.h"

namespace ts {

class ColormapTextures {
 public:
  // Uploaded on first use.
  GLuint texture(ColormapId id);

 private:
  std::array<GlTexture, 8> textures_;
};

}  // namespace ts
