# CMake generated Testfile for 
# Source directory: /work/main/tests/gui
# Build directory: /work/main/b/tests/gui
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/b/tests/gui/test_viewer_model[1]_include.cmake")
include("/work/main/b/tests/gui/test_gui_logic[1]_include.cmake")
include("/work/main/b/tests/gui/test_gui_views[1]_include.cmake")
include("/work/main/b/tests/gui/test_gui_no_display[1]_include.cmake")
include("/work/main/b/tests/gui/test_gui_screenshot[1]_include.cmake")
