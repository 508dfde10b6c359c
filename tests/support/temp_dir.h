// A fresh folder under the system's temporary folder, named after the running test, removed with
// everything in it at scope exit.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ts::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Names of the folder's entries (to see what a failed write left behind).
  std::vector<std::string> entries() const;

 private:
  std::filesystem::path path_;
};

}  // namespace ts::test
