# CMake generated Testfile for 
# Source directory: /work/main/app/cli
# Build directory: /work/main/b/app/cli
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
