// Writes a file so that it either appears whole or not at all: the bytes go to a temporary
// file in the destination's folder (same file system, so the rename is atomic), which is
// flushed to disk and renamed over the destination on commit(). Every write is checked; on
// any failure, or if the writer is destroyed without commit(), the temporary file is removed.
//
//   AtomicFileWriter out(path);      // throws FileWriteError: folder missing, not writable...
//   out.write(bytes);                // throws FileWriteError: disk full, file too large...
//   out.commit();                    // throws FileWriteError; then `path` holds the bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace ts {

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path destination);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  void write(std::span<const std::byte> bytes) { write(bytes.data(), bytes.size()); }
  void commit();

  uint64_t bytes_written() const { return written_; }
  const std::filesystem::path& destination() const { return destination_; }
  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  void discard() noexcept;

  std::filesystem::path destination_;
  std::filesystem::path temp_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace ts
