// Checks that an output file can be created before a long run starts, so that a typo in -o
// is reported at once rather than after the work (the write itself is still atomic and
// reports its own errors).
#pragma once

#include <filesystem>

namespace ts::cli {

// Throws FileWriteError naming the path when its folder does not exist or is not writable,
// or the path is an existing folder.
void check_output_file(const std::filesystem::path& path);

}  // namespace ts::cli
