# The installed SDK's CMake package: `find_package(tilescope 0.1)` in a user's project gives
#   tilescope::probe     header-only, the kernel side (tilescope/probe.h, portable.h, event.h...)
#   tilescope::recorder  the host recorder (tilescope/recorder.h over libtilescope_recorder.a)
#   tilescope::simt      the CPU path (libtilescope_cuda_cpu.a and libtilescope_simt.a, the CUDA
#                        shim headers), when Boost.Context and CUDA's host headers are found
# and tilescope_add_cpu_executable (TilescopeCpuExecutable.cmake). The install layout:
#   bin/                          tilescope, tilescope-gui
#   include/tilescope/            the probe and recorder headers, version.h
#   include/tilescope-simt/       the SIMT runtime's headers (cuda_shim/ holds <cuda_runtime.h>...)
#   lib/                          libtilescope_recorder.a, libtilescope_cuda_cpu.a, libtilescope_simt.a
#   lib/cmake/tilescope/          this package
# The config file (cmake/tilescopeConfig.cmake.in) makes imported targets of the installed files
# itself: the targets of the build are made for the tree (their include paths are the source
# tree's), the package for wherever the prefix is moved.
include(CMakePackageConfigHelpers)

set(TS_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tilescope)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/tilescopeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/package/tilescopeConfig.cmake
  INSTALL_DESTINATION ${TS_PACKAGE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR)
# 0.x: a minor version may change the API.
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/package/tilescopeConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
          ${CMAKE_CURRENT_BINARY_DIR}/package/tilescopeConfig.cmake
          ${CMAKE_CURRENT_BINARY_DIR}/package/tilescopeConfigVersion.cmake
          ${CMAKE_CURRENT_LIST_DIR}/TilescopeCpuExecutable.cmake
        DESTINATION ${TS_PACKAGE_DIR} COMPONENT sdk)
