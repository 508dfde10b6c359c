#include "app/gui/colormap_textures.h"

namespace ts {

GLuint ColormapTextures::texture(ColormapId id) {
  GlTexture& t = textures_.at(static_cast<size_t>(id));
  if (!t) {
    const ColormapTable& table = colormap_table(id);
    t = GlTexture::create();
    glBindTexture(GL_TEXTURE_2D, t.id());
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAX_LEVEL, 0);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, static_cast<GLsizei>(table.size()), 1, 0, GL_RGBA, GL_UNSIGNED_BYTE,
                 table.data());
    glBindTexture(GL_TEXTURE_2D, 0);
  }
  return t.id();
}

}  // namespace ts
