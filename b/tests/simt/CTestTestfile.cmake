# CMake generated Testfile for 
# Source directory: /work/main/tests/simt
# Build directory: /work/main/b/tests/simt
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/b/tests/simt/test_simt[1]_include.cmake")
add_test([=[simt_gpu]=] "/work/main/b/tests/simt/test_simt_gpu")
set_tests_properties([=[simt_gpu]=] PROPERTIES  LABELS "gpu" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/tests/simt/CMakeLists.txt;39;add_test;/work/main/tests/simt/CMakeLists.txt;0;")
