// The OpenGL 3.3 core API for the viewer's own GL code: glad's loader, generated into the
// build folder at build time (never committed). Include this before anything that includes
// GLFW (which is told not to include a GL header: GLFW_INCLUDE_NONE).
#pragma once

#include <glad/gl.h>

#include <stdexcept>

namespace ts {

// A GL resource could not be created (shader compile/link error, missing GL 3.3 support).
class GlError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ts
