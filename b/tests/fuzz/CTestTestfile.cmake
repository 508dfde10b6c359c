# CMake generated Testfile for 
# Source directory: /work/main/tests/fuzz
# Build directory: /work/main/b/tests/fuzz
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
