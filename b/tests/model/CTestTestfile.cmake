# CMake generated Testfile for 
# Source directory: /work/main/tests/model
# Build directory: /work/main/b/tests/model
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/b/tests/model/test_model_heatmap[1]_include.cmake")
include("/work/main/b/tests/model/test_model_capture[1]_include.cmake")
