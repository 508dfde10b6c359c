# CMake generated Testfile for 
# Source directory: /work/main/kernels
# Build directory: /work/main/b/kernels
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
