#include "app/model/export/staged_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>

#include "instrumentation/trace/file_error.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// A name no other export (of this or another process) picks at the same time.
std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(ticks % 1000000);
}

bool is_empty_folder(const fs::path& dir) {
  std::error_code ec;
  return fs::directory_iterator(dir, ec) == fs::directory_iterator() && !ec;
}

}  // namespace

StagedFolder::StagedFolder(const fs::path& destination) : destination_(destination) {
  const std::string shown = destination.string();
  if (destination.empty()) throw FileWriteError(destination, "the export folder is empty; give -o DIR");
  std::error_code ec;
  fs::path target = fs::absolute(destination, ec).lexically_normal();
  if (ec) throw FileWriteError(destination, "cannot resolve the export folder " + shown + ": " + ec.message());
  if (target.filename().empty()) target = target.parent_path();  // "out/" -> "out"
  if (target == target.root_path() || target.filename() == "..")
    throw FileWriteError(destination, "cannot export into " + shown + ": give a folder of its own, e.g. -o export");

  // The destination: missing, an empty folder, or an earlier export (replaced whole).
  const fs::file_status st = fs::symlink_status(target, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st))
      throw FileWriteError(destination, "cannot export to " + shown +
                                            ": it exists and is not a folder; choose a folder name with -o");
    if (!is_empty_folder(target) && !fs::exists(target / "summary.json"))
      throw FileWriteError(destination, "cannot export to " + shown +
                                            ": the folder holds files that are not a tilescope export (no "
                                            "summary.json), which would be lost; choose a new or empty folder with -o");
  }

  // Missing parents are created (and removed again if the export fails).
  const fs::path parent = target.parent_path();
  std::vector<fs::path> missing;
  for (fs::path p = parent; !p.empty(); p = p.parent_path()) {
    const fs::file_status ps = fs::status(p, ec);
    if (fs::exists(ps)) {
      if (!fs::is_directory(ps))
        throw FileWriteError(destination, "cannot create the export folder " + shown + ": " + p.string() +
                                              " is not a folder");
      break;
    }
    missing.push_back(p);
    if (p == p.root_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) != 0 && errno != EEXIST) {
      const int err = errno;
      discard();
      throw FileWriteError(destination, "cannot create the export folder " + shown + ": cannot create " +
                                            it->string() + " (" + errno_text(err) + "); choose a writable path with -o");
    }
    created_parents_.push_back(*it);
  }

  staging_ = parent / ("." + target.filename().string() + ".tmp-" + unique_suffix());
  if (::mkdir(staging_.c_str(), 0777) != 0) {
    const int err = errno;
    staging_.clear();
    discard();
    throw FileWriteError(destination, "cannot create the export folder " + shown + ": " + errno_text(err) +
                                          " (in " + parent.string() + "); choose a writable path with -o");
  }
  target_ = target;
}

StagedFolder::~StagedFolder() {
  if (!committed_) discard();
}

void StagedFolder::commit() {
  if (committed_) return;
  const std::string shown = destination_.string();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(target_, ec))) {
    if (::rename(staging_.c_str(), target_.c_str()) != 0)
      throw FileWriteError(destination_, "cannot put the export in place at " + shown + ": " + errno_text(errno));
    committed_ = true;
    return;
  }
  // Replace the earlier export (or empty folder) as a whole: swap the two folders in one step,
  // then remove the old one, now at the staging name.
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;
    fs::remove_all(staging_, ec);  // the earlier export; a leftover is harmless (hidden name)
    return;
  }
  if (errno != EINVAL && errno != ENOSYS)
    throw FileWriteError(destination_, "cannot replace the earlier export at " + shown + ": " + errno_text(errno));
  // No RENAME_EXCHANGE on this file system: move the old folder aside, the new one in.
  const fs::path aside = target_.parent_path() / ("." + target_.filename().string() + ".old-" + unique_suffix());
  if (::rename(target_.c_str(), aside.c_str()) != 0)
    throw FileWriteError(destination_, "cannot replace the earlier export at " + shown + ": " + errno_text(errno));
  if (::rename(staging_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    ::rename(aside.c_str(), target_.c_str());  // put the earlier export back
    throw FileWriteError(destination_, "cannot put the export in place at " + shown + ": " + errno_text(err));
  }
  committed_ = true;
  fs::remove_all(aside, ec);
}

void StagedFolder::discard() noexcept {
  std::error_code ec;
  if (!staging_.empty()) fs::remove_all(staging_, ec);
  for (auto it = created_parents_.rbegin(); it != created_parents_.rend(); ++it) fs::remove(*it, ec);  // if empty
  created_parents_.clear();
}

}  // namespace ts
