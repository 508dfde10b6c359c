#include "app/cli/output_path.h"

#include <unistd.h>

#include "instrumentation/trace/file_error.h"

namespace ts::cli {

void check_output_file(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const std::string shown = path.string();
  if (path.empty()) throw FileWriteError(path, "the output path is empty; give -o FILE");
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw FileWriteError(path, shown + " is a folder; give a file name, e.g. " +
                                   (path / "run.trace.safetensors").string());
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (fs::exists(parent, ec) && !fs::is_directory(parent, ec))
    throw FileWriteError(path, "cannot write " + shown + ": " + parent.string() +
                                   " is not a folder");
  if (!fs::is_directory(parent, ec))
    throw FileWriteError(path, "cannot write " + shown + ": the folder " + parent.string() +
                                   " does not exist (create it first)");
  if (::access(parent.c_str(), W_OK) != 0)
    throw FileWriteError(path, "cannot write " + shown + ": the folder " + parent.string() +
                                   " is not writable");
}

}  // namespace ts::cli
