# CMake generated Testfile for 
# Source directory: /work/main/app/model
# Build directory: /work/main/b/app/model
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("capture")
subdirs("analysis")
subdirs("export")
subdirs("viewer")
