// Compiles and links a GLSL program from sources (the viewer embeds shaders/ at build time).
#pragma once

#include <string_view>

#include "app/gui/gl_objects.h"

namespace ts {

// Throws GlError with the driver's log and the program's name when a stage does not compile
// or the program does not link.
GlProgram build_shader_program(std::string_view name, std::string_view vertex_source,
                               std::string_view fragment_source);

}  // namespace ts
