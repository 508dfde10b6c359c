// A folder that appears whole or not at all: files are written into a hidden staging folder
// beside the destination (same file system), which commit() puts in place with one rename.
// Destroyed without commit(), it removes the staging folder and any parent folders it created,
// so a failed export leaves nothing behind.
//
//   StagedFolder out("results/run1");   // throws FileWriteError naming the problem
//   write_files_into(out.path());       // the staging folder
//   out.commit();                       // results/run1 now holds exactly those files
//
// The destination may be missing, an empty folder, or an earlier export (a folder holding a
// summary.json): it is replaced as a whole (renameat2 RENAME_EXCHANGE where the file system has
// it), so stale files of the earlier export do not linger. A folder holding anything else is
// refused rather than overwritten: nothing of the user's is lost.
#pragma once

#include <filesystem>
#include <vector>

namespace ts {

class StagedFolder {
 public:
  explicit StagedFolder(const std::filesystem::path& destination);
  ~StagedFolder();
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  const std::filesystem::path& path() const { return staging_; }  // write here
  const std::filesystem::path& destination() const { return destination_; }
  void commit();

 private:
  void discard() noexcept;

  std::filesystem::path destination_;  // as given (messages)
  std::filesystem::path target_;       // absolute, normalised
  std::filesystem::path staging_;
  std::vector<std::filesystem::path> created_parents_;  // deepest last
  bool committed_ = false;
};

}  // namespace ts
