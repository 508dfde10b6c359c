// Owning handles for GL objects: deleted with their owner, movable, never copied. Must be
// created and destroyed while the viewer's GL context is current.
#pragma once

#include <utility>

#include "app/gui/gl_api.h"

namespace ts {

template <class Traits>
class GlObject {
 public:
  GlObject() = default;
  static GlObject create() { return GlObject(Traits::make()); }
  ~GlObject() { reset(); }
  GlObject(GlObject&& o) noexcept : id_(std::exchange(o.id_, 0)) {}
  GlObject& operator=(GlObject&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, 0);
    }
    return *this;
  }
  GlObject(const GlObject&) = delete;
  GlObject& operator=(const GlObject&) = delete;

  GLuint id() const { return id_; }
  explicit operator bool() const { return id_ != 0; }
  void reset() {
    if (id_) Traits::destroy(id_);
    id_ = 0;
  }

 private:
  explicit GlObject(GLuint id) : id_(id) {}
  GLuint id_ = 0;
};

struct GlTextureTraits {
  static GLuint make() {
    GLuint id = 0;
    glGenTextures(1, &id);
    return id;
  }
  static void destroy(GLuint id) { glDeleteTextures(1, &id); }
};
struct GlBufferTraits {
  static GLuint make() {
    GLuint id = 0;
    glGenBuffers(1, &id);
    return id;
  }
  static void destroy(GLuint id) { glDeleteBuffers(1, &id); }
};
struct GlVertexArrayTraits {
  static GLuint make() {
    GLuint id = 0;
    glGenVertexArrays(1, &id);
    return id;
  }
  static void destroy(GLuint id) { glDeleteVertexArrays(1, &id); }
};
struct GlProgramTraits {
  static GLuint make() { return glCreateProgram(); }
  static void destroy(GLuint id) { glDeleteProgram(id); }
};

struct GlFramebufferTraits {
  static GLuint make() {
    GLuint id = 0;
    glGenFramebuffers(1, &id);
    return id;
  }
  static void destroy(GLuint id) { glDeleteFramebuffers(1, &id); }
};

using GlTexture = GlObject<GlTextureTraits>;
using GlFramebuffer = GlObject<GlFramebufferTraits>;
using GlBuffer = GlObject<GlBufferTraits>;
using GlVertexArray = GlObject<GlVertexArrayTraits>;
using GlProgram = GlObject<GlProgramTraits>;

}  // namespace ts
