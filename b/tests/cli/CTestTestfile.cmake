# CMake generated Testfile for 
# Source directory: /work/main/tests/cli
# Build directory: /work/main/b/tests/cli
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/b/tests/cli/test_cli[1]_include.cmake")
add_test([=[cli_gpu]=] "/work/main/b/tests/cli/test_cli_gpu")
set_tests_properties([=[cli_gpu]=] PROPERTIES  LABELS "gpu" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/tests/cli/CMakeLists.txt;27;add_test;/work/main/tests/cli/CMakeLists.txt;0;")
