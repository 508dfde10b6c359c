// Writes a file so that it either appears whole or not at all: the bytes go to a temporary
// file in the destination's folder (same file system, so the rename is atomic), which is
// flushed to disk and renamed over the destination on commit(). Every write is checked; on
// any failure, or if the writer is destroyed without commit(), the temporary file is removed.
// The destination obeys write_target.h: an existing one must be a regular file (a symbolic
// link to one is followed and kept), checked when the writer opens and again just before the
// rename.
//
//   AtomicFileWriter out(path);      // throws FileWriteError: folder missing, not writable...
//   out.write(bytes);                // throws FileWriteError: disk full, file too large...
//   out.commit();                    // throws FileWriteError; then `path` holds the bytes
//
// Cancelling: while a CancelWrites is alive (the CLI holds one while it writes), every writer
// checks its flag between chunks of a write and before the rename; once the flag is set it
// removes its temporary file and throws WriteCancelled.
//
// Test hook: with TILESCOPE_TEST_HOLD_BEFORE_RENAME=FILE in the environment, the first commit()
// of the process creates FILE once its bytes are written and then waits (up to 60 s) for a
// cancel request before it renames, so that a test can send a signal at exactly that point.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>

namespace ts {

class CancelWrites {
 public:
  explicit CancelWrites(const std::atomic<bool>* requested);
  ~CancelWrites();
  CancelWrites(const CancelWrites&) = delete;
  CancelWrites& operator=(const CancelWrites&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// Throws WriteCancelled naming `destination` when a live CancelWrites' flag is set.
void throw_if_writes_cancelled(const std::filesystem::path& destination);

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path destination);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  void write(std::span<const std::byte> bytes) { write(bytes.data(), bytes.size()); }
  // `check_before_rename`, when given, runs once the bytes are on disk, just before the rename
  // (after the write target's own check): what it throws discards the file and propagates, so
  // that a rule about what the destination may be (a trace replaces only a trace) holds at the
  // moment of replacing, not only before a long write.
  void commit(const std::function<void()>& check_before_rename = {});

  uint64_t bytes_written() const { return written_; }
  const std::filesystem::path& destination() const { return destination_; }
  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  void discard() noexcept;

  std::filesystem::path destination_;  // as given (messages)
  std::filesystem::path target_;       // what the rename replaces (a symlink's file)
  std::filesystem::path temp_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace ts
