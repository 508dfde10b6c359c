# CMake generated Testfile for 
# Source directory: /work/main/tests/analysis
# Build directory: /work/main/b/tests/analysis
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/b/tests/analysis/test_analysis[1]_include.cmake")
include("/work/main/b/tests/analysis/test_analysis_cli[1]_include.cmake")
add_test([=[analysis_gpu]=] "/work/main/b/tests/analysis/test_analysis_gpu")
set_tests_properties([=[analysis_gpu]=] PROPERTIES  LABELS "gpu" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/tests/analysis/CMakeLists.txt;46;add_test;/work/main/tests/analysis/CMakeLists.txt;0;")
