# CMake generated Testfile for 
# Source directory: /work/main/app/model/viewer
# Build directory: /work/main/b/app/model/viewer
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
