# find_package(tilescope_probe) with CMAKE_PREFIX_PATH set to `python -c "import tilescope;
# print(tilescope.get_cmake_dir())"`: the target tilescope::probe (header-only, the kernel side:
# tilescope/probe.h) over the headers shipped in the Python package. The installed SDK's own
# package (find_package(tilescope)) has it too, with the recorder and the CPU path.
get_filename_component(_tilescope_probe_include "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
if(NOT EXISTS "${_tilescope_probe_include}/tilescope/probe.h")
  # Run from a checkout: the repository's headers.
  get_filename_component(_tilescope_probe_include "${CMAKE_CURRENT_LIST_DIR}/../../../instrumentation/probe" ABSOLUTE)
endif()
if(NOT TARGET tilescope::probe)
  add_library(tilescope::probe INTERFACE IMPORTED)
  set_target_properties(tilescope::probe PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_tilescope_probe_include}")
endif()
set(TILESCOPE_PROBE_INCLUDE_DIR "${_tilescope_probe_include}")
unset(_tilescope_probe_include)
