#include "app/model/viewer/recent_files.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/atomic_file.h"
#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/file_error.h"

namespace ts {

RecentFiles::RecentFiles(std::filesystem::path store, size_t max_entries)
    : store_(std::move(store)), max_entries_(std::max<size_t>(1, max_entries)) {}

std::filesystem::path RecentFiles::default_store() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  // The XDG spec: a relative XDG_CONFIG_HOME is invalid and must be ignored.
  if (xdg && *xdg && std::filesystem::path(xdg).is_absolute())
    return std::filesystem::path(xdg) / "tilescope" / "recent.json";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::filesystem::path(home) / ".config" / "tilescope" / "recent.json";
  return {};
}

std::filesystem::path RecentFiles::normalise(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(file, ec);
  if (ec) p = file;
  return p.lexically_normal();
}

std::string RecentFiles::load() {
  entries_.clear();
  if (store_.empty()) return {};
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(store_, ec))) return {};
  // A regular file of a few kilobytes: a FIFO there would hang the viewer, /dev/zero fill its
  // memory (file_bytes.h refuses both; the cap bounds the rest).
  std::string text;
  try {
    text = read_small_file(store_, kMaxStoreBytes);
  } catch (const FileReadError& e) {
    return std::string(e.what()) + "; the recent-files list is not used (remove or replace " + store_.string() + ")";
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("recent") || !j["recent"].is_array())
    return "the recent-files list " + store_.string() +
           " is damaged (expected {\"recent\": [paths]}); it will be rewritten";
  for (const nlohmann::json& e : j["recent"]) {
    if (!e.is_string() || e.get<std::string>().empty()) continue;
    const std::filesystem::path p = normalise(e.get<std::string>());
    if (std::find(entries_.begin(), entries_.end(), p) != entries_.end()) continue;
    entries_.push_back(p);
    if (entries_.size() == max_entries_) break;
  }
  return {};
}

void RecentFiles::add(const std::filesystem::path& file) {
  const std::filesystem::path p = normalise(file);
  entries_.erase(std::remove(entries_.begin(), entries_.end(), p), entries_.end());
  entries_.insert(entries_.begin(), p);
  if (entries_.size() > max_entries_) entries_.resize(max_entries_);
  save();
}

void RecentFiles::remove(const std::filesystem::path& file) {
  const std::filesystem::path p = normalise(file);
  entries_.erase(std::remove(entries_.begin(), entries_.end(), p), entries_.end());
  save();
}

void RecentFiles::save() const {
  if (store_.empty()) return;
  std::error_code ec;
  // A bare file name ("recent.json") lives in the current folder: nothing to create.
  if (!store_.parent_path().empty()) std::filesystem::create_directories(store_.parent_path(), ec);
  if (ec)
    throw FileWriteError(store_, "cannot write the recent-files list " + store_.string() + ": cannot create its folder (" +
                                     ec.message() + ")");
  nlohmann::json j;
  j["recent"] = nlohmann::json::array();
  for (const auto& p : entries_) j["recent"].push_back(p.string());
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";  // paths need not be UTF-8
  AtomicFileWriter out(store_);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace ts
