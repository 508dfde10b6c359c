# CMake generated Testfile for 
# Source directory: /work/main/app
# Build directory: /work/main/b/app
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("model")
subdirs("cli")
subdirs("gui")
