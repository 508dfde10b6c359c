#include "app/gui/shader_program.h"

#include <algorithm>
#include <string>

namespace ts {
namespace {

std::string shader_log(GLuint shader) {
  GLint length = 0;
  glGetShaderiv(shader, GL_INFO_LOG_LENGTH, &length);
  std::string log(static_cast<size_t>(std::max(length, 1)), '\0');
  glGetShaderInfoLog(shader, length, nullptr, log.data());
  return log;
}

GLuint compile(std::string_view name, GLenum stage, std::string_view source) {
  const GLuint shader = glCreateShader(stage);
  const GLchar* text = source.data();
  const auto length = static_cast<GLint>(source.size());
  glShaderSource(shader, 1, &text, &length);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (ok != GL_TRUE) {
    const std::string log = shader_log(shader);
    glDeleteShader(shader);
    throw GlError("the " + std::string(name) + (stage == GL_VERTEX_SHADER ? " vertex" : " fragment") +
                  " shader does not compile on this GL driver: " + log);
  }
  return shader;
}

}  // namespace

GlProgram build_shader_program(std::string_view name, std::string_view vertex_source,
                               std::string_view fragment_source) {
  const GLuint vs = compile(name, GL_VERTEX_SHADER, vertex_source);
  GLuint fs = 0;
  try {
    fs = compile(name, GL_FRAGMENT_SHADER, fragment_source);
  } catch (...) {
    glDeleteShader(vs);
    throw;
  }
  GlProgram program = GlProgram::create();
  glAttachShader(program.id(), vs);
  glAttachShader(program.id(), fs);
  glLinkProgram(program.id());
  glDetachShader(program.id(), vs);
  glDetachShader(program.id(), fs);
  glDeleteShader(vs);
  glDeleteShader(fs);
  GLint ok = GL_FALSE;
  glGetProgramiv(program.id(), GL_LINK_STATUS, &ok);
  if (ok != GL_TRUE) {
    GLint length = 0;
    glGetProgramiv(program.id(), GL_INFO_LOG_LENGTH, &length);
    std::string log(static_cast<size_t>(std::max(length, 1)), '\0');
    glGetProgramInfoLog(program.id(), length, nullptr, log.data());
    throw GlError("the " + std::string(name) + " shader program does not link: " + log);
  }
  return program;
}

}  // namespace ts
