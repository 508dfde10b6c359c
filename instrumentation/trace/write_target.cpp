#include "instrumentation/trace/write_target.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/file_error.h"

namespace ts {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(const fs::path& path, const std::string& what) {
  throw FileWriteError(path, "cannot write " + path.string() + ": " + what);
}

std::string_view kind_name(WriteTarget kind) { return kind == WriteTarget::file ? "a regular file" : "a folder"; }

}  // namespace

void check_write_target(const fs::path& path, WriteTarget kind, std::string_view example_name) {
  if (path.empty()) throw FileWriteError(path, "the output path is empty");
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return;  // nothing there (or a parent is missing: the write says so)
    refuse(path, std::error_code(errno, std::generic_category()).message());
  }
  struct stat target = link;
  if (S_ISLNK(link.st_mode) && ::stat(path.c_str(), &target) != 0)
    refuse(path, "it is a symbolic link to nothing (" + std::error_code(errno, std::generic_category()).message() +
                     "); remove the link or choose another path");
  const bool wanted = kind == WriteTarget::file ? S_ISREG(target.st_mode) : S_ISDIR(target.st_mode);
  if (wanted) return;
  const std::string what = S_ISLNK(link.st_mode)
                               ? "it is a symbolic link to " + std::string(file_type_name(target.st_mode))
                               : "it is " + std::string(file_type_name(target.st_mode));
  const std::string hint =
      kind == WriteTarget::file && S_ISDIR(target.st_mode)
          ? "; give a file name in it" + (example_name.empty() ? std::string() : ", e.g. " + (path / example_name).string())
          : "; tilescope replaces only " + std::string(kind_name(kind)) + ": choose another path";
  refuse(path, what + ", not " + std::string(kind_name(kind)) + hint);
}

fs::path resolve_file_target(const fs::path& path) {
  check_write_target(path, WriteTarget::file);
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(path, ec))) return path;
  const fs::path resolved = fs::canonical(path, ec);
  if (ec) refuse(path, "cannot follow the symbolic link: " + ec.message());
  check_write_target(resolved, WriteTarget::file);
  return resolved;
}

void check_output_file(const fs::path& path, std::string_view example_name) {
  if (path.empty()) throw FileWriteError(path, "the output path is empty; give -o FILE");
  check_write_target(path, WriteTarget::file, example_name);
  const fs::path target = resolve_file_target(path);
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (fs::exists(parent, ec) && !fs::is_directory(parent, ec))
    refuse(path, parent.string() + " is not a folder");
  if (!fs::is_directory(parent, ec)) refuse(path, "the folder " + parent.string() + " does not exist (create it first)");
  if (::access(parent.c_str(), W_OK) != 0) refuse(path, "the folder " + parent.string() + " is not writable");
}

void check_not_an_input(const fs::path& output, std::span<const fs::path> inputs, std::string_view inputs_role) {
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // nothing there yet: it cannot be an input
  for (const fs::path& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) != 0) continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      refuse(output, "it is " + std::string(inputs_role) + " (" + input.string() +
                         (input == output ? "" : ", the same file") + "), which would be lost; choose another output path");
  }
}

}  // namespace ts
