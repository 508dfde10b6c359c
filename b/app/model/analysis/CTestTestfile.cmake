# CMake generated Testfile for 
# Source directory: /work/main/app/model/analysis
# Build directory: /work/main/b/app/model/analysis
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
