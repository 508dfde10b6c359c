# Every dependency comes from a Debian package installed by scripts/setup-debian.sh.
# (The CUDA toolkit is the exception: it is expected at /usr/local/cuda.)

# Boost.Context: the fibers of the SIMT runtime (one fiber per CUDA thread). Static, so the
# CLI carries it to machines without Debian's packages.
set(Boost_USE_STATIC_LIBS ON)
find_package(Boost 1.74 REQUIRED COMPONENTS context)

find_package(nlohmann_json 3.11 REQUIRED)   # trace file headers, JSON reports
find_package(CLI11 2.1 REQUIRED)             # command-line parsing
find_package(Threads REQUIRED)
find_package(GTest REQUIRED)

if(TILESCOPE_BENCH)
  find_package(benchmark REQUIRED)
endif()

# stb (Debian's libstb): stb_image_write for PNG export. Its archive holds the implementations.
find_path(STB_INCLUDE_DIR stb_image_write.h PATH_SUFFIXES stb REQUIRED)
find_library(STB_STATIC_LIBRARY NAMES libstb.a REQUIRED)
add_library(ts_stb INTERFACE)
target_include_directories(ts_stb SYSTEM INTERFACE ${STB_INCLUDE_DIR})
target_link_libraries(ts_stb INTERFACE ${STB_STATIC_LIBRARY} m)

# CUDA headers on the host: cuda_fp16.h / cuda_bf16.h / vector_types.h compile with g++ and
# give the CPU build the same __half and __nv_bfloat16 as nvcc's.
find_path(CUDA_HOST_INCLUDE_DIR cuda_fp16.h
          HINTS /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include REQUIRED)
add_library(ts_cuda_headers INTERFACE)
target_include_directories(ts_cuda_headers SYSTEM INTERFACE ${CUDA_HOST_INCLUDE_DIR})

if(TILESCOPE_GUI)
  find_package(OpenGL REQUIRED COMPONENTS OpenGL)
  find_package(glfw3 3.3 REQUIRED)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(IMGUI REQUIRED IMPORTED_TARGET imgui)
  find_program(GLAD_PROGRAM glad REQUIRED)
endif()
