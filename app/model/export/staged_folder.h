// A folder that appears whole or not at all: files are written into a hidden staging folder
// beside the destination (same file system), which commit() puts in place with one rename.
// Destroyed without commit(), it removes the staging folder and any parent folders it created,
// so a failed or cancelled export leaves nothing behind.
//
//   StagedFolder out("results/run1");   // throws FileWriteError naming the problem
//   write_files_into(out.path());       // the staging folder
//   out.commit();                       // results/run1 now holds exactly those files
//
// What an existing destination may be (docs/file-safety.md): missing, an empty folder, or an
// earlier export that proves it is one: it holds a list of the files that export wrote
// (kExportListName, written by commit()), and every entry of the folder is on that list. Such a
// folder is replaced as a whole (renameat2 RENAME_EXCHANGE where the file system has it) and
// then exactly the listed files are deleted, so stale files of the earlier export do not
// linger and nothing else is ever removed. Anything else is refused with a FileWriteError
// naming an entry that is not the export's own: the user's files are never lost. So are the
// current folder and the folders that hold it ("-o ." and "-o sub/.."), the file system's root,
// and anything that is not a folder (write_target.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ts {

// The list of files an export wrote, in the export's folder: JSON
//   {"tilescope_export": 1, "files": ["summary.json", "a/summary.json", ...]}
// (relative paths, '/'-separated; the list itself not included).
inline constexpr const char* kExportListName = ".tilescope-export.json";

class StagedFolder {
 public:
  explicit StagedFolder(const std::filesystem::path& destination);
  ~StagedFolder();
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  const std::filesystem::path& path() const { return staging_; }  // write here
  const std::filesystem::path& destination() const { return destination_; }
  // Throws FileWriteError (WriteCancelled when writes are cancelled, atomic_file.h).
  void commit();

 private:
  void discard() noexcept;
  void write_file_list() const;
  void remove_earlier_export(const std::filesystem::path& folder) const;

  std::filesystem::path destination_;  // as given (messages)
  std::filesystem::path target_;       // absolute, symbolic links resolved
  std::filesystem::path staging_;
  std::vector<std::filesystem::path> created_parents_;  // deepest last
  std::vector<std::string> earlier_files_;              // the listed files of the folder replaced
  bool committed_ = false;
};

// The files of the earlier export at `folder` (relative paths, as listed), or empty for an
// empty folder. Throws FileWriteError naming `shown` and the first entry that proves the folder
// is not (only) an earlier export. For StagedFolder and its tests.
std::vector<std::string> earlier_export_files(const std::filesystem::path& folder, const std::string& shown);

}  // namespace ts
