# Compiler flags shared by every target of the project's own code.
#
# ts_project_code(target): warnings as errors, the repository root on the include path
# (every include is written from the root: "instrumentation/simt/runtime.h"), and the
# sanitizers when TILESCOPE_SANITIZE is on. Third-party and generated sources (ImGui's
# backends, glad's loader) are built in their own targets without it.

set(TILESCOPE_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)
get_filename_component(TILESCOPE_ROOT ${TILESCOPE_ROOT} ABSOLUTE)

if(TILESCOPE_SANITIZE)
  # Applied globally so that every object (and the GoogleTest main) agrees on the runtime.
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=address,undefined)
  add_compile_definitions(TILESCOPE_ASAN=1)
endif()

function(ts_project_code target)
  target_include_directories(${target} PUBLIC ${TILESCOPE_ROOT})
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Werror -Wno-error=deprecated-declarations>
    # GCC 12 at -O3 (the release preset) reports standard-library code it inlined with these
    # flow warnings, falsely (GCC bugs 105651, 105329): they stay warnings, not errors.
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-error=restrict -Wno-error=stringop-overread -Wno-error=stringop-overflow -Wno-error=array-bounds>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings --expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra>)
endfunction()

# Programs that must run on the lent GPU machine (no Debian packages there): link the C++
# runtime statically; Boost.Context and stb are linked as static archives (see Dependencies).
function(ts_portable_executable target)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
endfunction()
