#include "app/model/export/staged_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/atomic_file.h"
#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/write_target.h"

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

// The list is a few kilobytes; anything much larger is not ours.
constexpr uint64_t kMaxListBytes = uint64_t{4} << 20;

[[noreturn]] void refuse_folder(const fs::path& folder, const std::string& shown, const std::string& why) {
  throw FileWriteError(folder, "cannot export to " + shown + ": " + why +
                                   "; choose a new or empty folder with -o (an export replaces only an earlier "
                                   "export's own files)");
}

// Whether `p` (relative) is a plain path of names: no root, no ".", "..", or empty part.
bool plain_relative(const fs::path& p) {
  if (p.empty() || p.has_root_path()) return false;
  for (const fs::path& part : p)
    if (part.empty() || part == "." || part == "..") return false;
  return true;
}

// Whether `inner` is `outer` or lies inside it (both absolute and canonical).
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i)
    if (i == inner.end() || *i != *o) return false;
  return true;
}

}  // namespace

std::vector<std::string> earlier_export_files(const fs::path& folder, const std::string& shown) {
  if (is_empty_folder(folder)) return {};
  const fs::path list_path = folder / kExportListName;
  struct stat st {};
  if (::lstat(list_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    refuse_folder(folder, shown, std::string("the folder holds files and is not an earlier tilescope export (it has no ") +
                                     kExportListName + ")");
  std::string text;
  try {
    text = read_small_file(list_path, kMaxListBytes);
  } catch (const FileReadError& e) {
    refuse_folder(folder, shown, e.what());
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string damaged = std::string("its ") + kExportListName + " is damaged, so it cannot prove the folder is an export";
  if (j.is_discarded() || !j.is_object() || !j.contains("files") || !j["files"].is_array()) refuse_folder(folder, shown, damaged);
  std::set<std::string> files, folders;
  std::vector<std::string> listed;
  for (const nlohmann::json& e : j["files"]) {
    if (!e.is_string()) refuse_folder(folder, shown, damaged);
    const fs::path rel(e.get<std::string>());
    if (!plain_relative(rel) || rel == kExportListName) refuse_folder(folder, shown, damaged);
    if (!files.insert(rel.generic_string()).second) continue;
    listed.push_back(rel.generic_string());
    for (fs::path p = rel.parent_path(); !p.empty(); p = p.parent_path()) folders.insert(p.generic_string());
  }
  // Every entry must be one the export wrote: a listed regular file, or a folder on the way to one.
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(folder).generic_string();
    if (rel == kExportListName) continue;
    const fs::file_status s = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_regular_file(s) && files.count(rel)) continue;
    if (fs::is_directory(s) && folders.count(rel)) continue;
    refuse_folder(folder, shown, "it holds " + rel + ", which the earlier export there did not write");
  }
  if (ec) refuse_folder(folder, shown, "cannot list it (" + ec.message() + ")");
  return listed;
}

StagedFolder::StagedFolder(const fs::path& destination) : destination_(destination) {
  const std::string shown = destination.string();
  if (destination.empty()) throw FileWriteError(destination, "the export folder is empty; give -o DIR");
  std::error_code ec;
  // The file system's meaning of the path (symbolic links and ".." resolved as the OS does),
  // so that what is checked is what is replaced.
  fs::path target = fs::weakly_canonical(fs::absolute(destination, ec), ec);
  if (ec) throw FileWriteError(destination, "cannot resolve the export folder " + shown + ": " + ec.message());
  if (target.filename().empty()) target = target.parent_path();  // "out/" -> "out"
  if (target == target.root_path())
    throw FileWriteError(destination, "cannot export into " + shown + ": give a folder of its own, e.g. -o export");
  const fs::path cwd = fs::weakly_canonical(fs::current_path(ec), ec);
  if (!ec && is_within(cwd, target))
    throw FileWriteError(destination, "cannot export into " + shown + ": it is the current folder" +
                                          (cwd == target ? std::string() : " or holds it") +
                                          ", which an export would replace; give a folder of its own, e.g. -o export");
  check_write_target(target, WriteTarget::folder);

  // The destination: missing, an empty folder, or an earlier export (replaced whole).
  if (fs::exists(fs::symlink_status(target, ec))) earlier_files_ = earlier_export_files(target, shown);

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
    if (::mkdir(it->c_str(), 0777) == 0) {
      created_parents_.push_back(*it);  // ours: removed again if the export fails
    } else if (errno != EEXIST) {
      const int err = errno;
      discard();
      throw FileWriteError(destination, "cannot create the export folder " + shown + ": cannot create " +
                                            it->string() + " (" + errno_text(err) + "); choose a writable path with -o");
    }
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

void StagedFolder::write_file_list() const {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(staging_, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path().lexically_relative(staging_).generic_string());
  if (ec) throw FileWriteError(destination_, "cannot list the export written to " + staging_.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  const std::string text = nlohmann::json{{"tilescope_export", 1}, {"files", files}}.dump(1) + "\n";
  AtomicFileWriter out(staging_ / kExportListName);
  out.write(text.data(), text.size());
  out.commit();
}

void StagedFolder::remove_earlier_export(const fs::path& folder) const {
  // Exactly the listed files, then the folders that held them if they are empty now: anything
  // that appeared since the check stays where it is.
  std::set<fs::path, std::greater<>> folders;
  for (const std::string& rel : earlier_files_) {
    ::unlink((folder / rel).c_str());
    for (fs::path p = fs::path(rel).parent_path(); !p.empty(); p = p.parent_path()) folders.insert(p);
  }
  for (const fs::path& rel : folders) ::rmdir((folder / rel).c_str());  // deepest first
  ::unlink((folder / kExportListName).c_str());
  ::rmdir(folder.c_str());
}

void StagedFolder::commit() {
  if (committed_) return;
  const std::string shown = destination_.string();
  throw_if_writes_cancelled(destination_);
  write_file_list();
  throw_if_writes_cancelled(destination_);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(target_, ec))) {
    // rename() of a folder replaces only a missing or empty one.
    if (::rename(staging_.c_str(), target_.c_str()) != 0)
      throw FileWriteError(destination_, "cannot put the export in place at " + shown + ": " + errno_text(errno));
    committed_ = true;
    return;
  }
  // Checked again: the folder may have changed while the export was written.
  earlier_files_ = earlier_export_files(target_, shown);
  // Replace the earlier export as a whole: swap the two folders in one step; the earlier export
  // is then at the staging name, where it is checked once more (a file could have been added
  // between the check and the swap: then the swap is undone) and its files removed.
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
    try {
      earlier_files_ = earlier_export_files(staging_, shown);
    } catch (const FileWriteError&) {
      ::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE);
      throw;
    }
    committed_ = true;
    remove_earlier_export(staging_);
    return;
  }
  if (errno != EINVAL && errno != ENOSYS)
    throw FileWriteError(destination_, "cannot replace the earlier export at " + shown + ": " + errno_text(errno));
  // No RENAME_EXCHANGE on this file system: move the old folder aside, the new one in.
  const fs::path aside = target_.parent_path() / ("." + target_.filename().string() + ".old-" + unique_suffix());
  if (::rename(target_.c_str(), aside.c_str()) != 0)
    throw FileWriteError(destination_, "cannot replace the earlier export at " + shown + ": " + errno_text(errno));
  try {
    earlier_files_ = earlier_export_files(aside, shown);
  } catch (const FileWriteError&) {
    ::rename(aside.c_str(), target_.c_str());
    throw;
  }
  if (::rename(staging_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    ::rename(aside.c_str(), target_.c_str());  // put the earlier export back
    throw FileWriteError(destination_, "cannot put the export in place at " + shown + ": " + errno_text(err));
  }
  committed_ = true;
  remove_earlier_export(aside);
}

void StagedFolder::discard() noexcept {
  std::error_code ec;
  // The staging folder is this export's own (a fresh hidden name), so all of it goes.
  if (!staging_.empty()) fs::remove_all(staging_, ec);
  for (auto it = created_parents_.rbegin(); it != created_parents_.rend(); ++it) fs::remove(*it, ec);  // if empty
  created_parents_.clear();
}

}  // namespace ts
