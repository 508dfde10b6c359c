# CMake generated Testfile for 
# Source directory: /work/main
# Build directory: /work/main/b
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("base")
subdirs("instrumentation")
subdirs("kernels")
subdirs("app")
subdirs("tests")
