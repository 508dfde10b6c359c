# CMake generated Testfile for 
# Source directory: /work/main/instrumentation
# Build directory: /work/main/b/instrumentation
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("probe")
subdirs("simt")
subdirs("trace")
