# CMake generated Testfile for 
# Source directory: /work/main/tests/kernels
# Build directory: /work/main/b/tests/kernels
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/b/tests/kernels/test_kernels_host[1]_include.cmake")
include("/work/main/b/tests/kernels/test_reference[1]_include.cmake")
include("/work/main/b/tests/kernels/test_kernels_cpu[1]_include.cmake")
include("/work/main/b/tests/kernels/test_kernels_gpu[1]_include.cmake")
add_test([=[test_reference_without_avx2]=] "/work/main/b/tests/kernels/test_reference")
set_tests_properties([=[test_reference_without_avx2]=] PROPERTIES  ENVIRONMENT "TILESCOPE_NO_AVX2=1" LABELS "cpu" _BACKTRACE_TRIPLES "/work/main/tests/kernels/CMakeLists.txt;23;add_test;/work/main/tests/kernels/CMakeLists.txt;0;")
