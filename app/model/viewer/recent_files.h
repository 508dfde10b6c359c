// The viewer's recent files: the traces a person opened last, newest first, at most
// `max_entries`, each once (paths are made absolute and normalised before comparing), kept in
// a small JSON file so that they survive a restart:
//   $XDG_CONFIG_HOME/tilescope/recent.json, else ~/.config/tilescope/recent.json
//   {"recent": ["/abs/path/a.trace.safetensors", ...]}
// Every change is written at once, atomically (temporary file, then rename). A missing store is
// an empty list; a damaged one is reported (load() says why) and replaced on the next change.
// No GL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ts {

class RecentFiles {
 public:
  static constexpr size_t kDefaultMaxEntries = 12;
  // A store larger than this is not read (a few paths take a few kilobytes).
  static constexpr uint64_t kMaxStoreBytes = uint64_t{1} << 20;

  // `store` empty: a list kept in memory only (no home folder to keep it in).
  explicit RecentFiles(std::filesystem::path store, size_t max_entries = kDefaultMaxEntries);

  // Where the list lives for this user (see above); empty when neither XDG_CONFIG_HOME nor
  // HOME is set.
  static std::filesystem::path default_store();

  // Reads the store. Returns "" or why it could not be used (the list is then empty): an
  // unreadable or damaged file, one that is not a regular file (a FIFO, a device), or one over
  // kMaxStoreBytes. Entries past max_entries, duplicates and non-strings are dropped.
  std::string load();

  // Puts `file` first (moving it up if already listed), drops the oldest past max_entries and
  // saves. Throws FileWriteError naming the store when it cannot be written (the list in
  // memory is updated all the same).
  void add(const std::filesystem::path& file);
  // Removes `file` (e.g. it no longer exists) and saves; throws like add().
  void remove(const std::filesystem::path& file);

  const std::vector<std::filesystem::path>& entries() const { return entries_; }
  const std::filesystem::path& store() const { return store_; }
  size_t max_entries() const { return max_entries_; }

  // The form paths are compared and kept in: absolute, lexically normalised.
  static std::filesystem::path normalise(const std::filesystem::path& file);

 private:
  void save() const;

  std::filesystem::path store_;
  size_t max_entries_;
  std::vector<std::filesystem::path> entries_;
};

}  // namespace ts
