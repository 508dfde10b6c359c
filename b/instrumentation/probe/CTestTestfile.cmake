# CMake generated Testfile for 
# Source directory: /work/main/instrumentation/probe
# Build directory: /work/main/b/instrumentation/probe
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
