# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/b/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("simt")
subdirs("kernels")
subdirs("trace")
subdirs("model")
subdirs("analysis")
subdirs("cli")
subdirs("gui")
subdirs("fuzz")
