# Turns shader source files into a C++ header of string constants, so that the viewer carries
# its shaders and runs from any folder. Run at build time:
#   cmake -DOUTPUT=<header> -DINPUTS=<a.vert;b.frag> -P embed_shaders.cmake
# heatmap.frag becomes `ts::shaders::heatmap_frag`.
if(NOT OUTPUT OR NOT INPUTS)
  message(FATAL_ERROR "embed_shaders.cmake: OUTPUT and INPUTS are required")
endif()

set(body "// Generated at build time by app/gui/embed_shaders.cmake from shaders/. Do not edit.\n")
string(APPEND body "#pragma once\n\n#include <string_view>\n\nnamespace ts::shaders {\n\n")
foreach(input IN LISTS INPUTS)
  get_filename_component(name "${input}" NAME)
  string(REPLACE "." "_" symbol "${name}")
  file(READ "${input}" source)
  if(source MATCHES "\\)tsglsl\"")
    message(FATAL_ERROR "${input} contains the raw-string delimiter )tsglsl\"")
  endif()
  string(APPEND body "// ${name}\ninline constexpr std::string_view ${symbol} = R\"tsglsl(${source})tsglsl\";\n\n")
endforeach()
string(APPEND body "}  // namespace ts::shaders\n")

# Write only when changed, so that dependants are not rebuilt for nothing.
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL body)
  file(WRITE "${OUTPUT}.tmp" "${body}")
  file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
endif()
