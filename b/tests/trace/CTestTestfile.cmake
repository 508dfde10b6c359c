# CMake generated Testfile for 
# Source directory: /work/main/tests/trace
# Build directory: /work/main/b/tests/trace
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/b/tests/trace/test_safetensors[1]_include.cmake")
include("/work/main/b/tests/trace/test_trace_file[1]_include.cmake")
include("/work/main/b/tests/trace/test_npy[1]_include.cmake")
include("/work/main/b/tests/trace/test_tensor_files[1]_include.cmake")
include("/work/main/b/tests/trace/test_atomic_write[1]_include.cmake")
include("/work/main/b/tests/trace/test_python_interop[1]_include.cmake")
include("/work/main/b/tests/trace/test_file_bytes[1]_include.cmake")
include("/work/main/b/tests/trace/test_write_target[1]_include.cmake")
include("/work/main/b/tests/trace/test_display_text[1]_include.cmake")
include("/work/main/b/tests/trace/test_trace_readers[1]_include.cmake")
