#include "instrumentation/trace/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/write_target.h"

namespace ts {

namespace {

// A name no other writer (thread or process) picks: pid, a process-wide counter, randomness.
std::filesystem::path temp_name_for(const std::filesystem::path& destination, int attempt) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::filesystem::path folder =
      destination.has_parent_path() ? destination.parent_path() : std::filesystem::path(".");
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp-%d-%llu-%d-%08llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)), attempt,
                static_cast<unsigned long long>(rng() & 0xffffffffu));
  // Hidden, and short enough that the suffix never pushes it past NAME_MAX (255).
  const std::string base = destination.filename().string();
  std::string name = ".";
  name.append(base, 0, std::min<size_t>(base.size(), 180));
  name.append(suffix);
  return folder / name;
}

// The flag of the live CancelWrites (null: writes are not cancellable).
std::atomic<const std::atomic<bool>*> g_cancel_flag{nullptr};

// Writes go out in chunks of this size, so that a cancel request is seen within one chunk.
constexpr size_t kWriteChunk = size_t{16} << 20;

// TILESCOPE_TEST_HOLD_BEFORE_RENAME (see the header): the first commit of the process says it
// is there by creating the named file, then waits for a cancel request.
void hold_before_rename_for_tests(const std::filesystem::path& temp) {
  static std::atomic<bool> held{false};
  const char* marker = std::getenv("TILESCOPE_TEST_HOLD_BEFORE_RENAME");
  if (marker == nullptr || *marker == '\0' || held.exchange(true)) return;
  const int fd = ::open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    const std::string text = temp.string() + "\n";
    ssize_t ignored = ::write(fd, text.data(), text.size());
    (void)ignored;
    ::close(fd);
  }
  for (int waited_ms = 0; waited_ms < 60000; waited_ms += 5) {
    const std::atomic<bool>* flag = g_cancel_flag.load();
    if (flag != nullptr && flag->load()) return;
    ::usleep(5000);
  }
}

bool writes_cancelled() {
  const std::atomic<bool>* flag = g_cancel_flag.load();
  return flag != nullptr && flag->load();
}

WriteCancelled cancelled_error(const std::filesystem::path& destination) {
  return WriteCancelled(destination, "cancelled while writing " + destination.string() + "; nothing was written");
}

}  // namespace

CancelWrites::CancelWrites(const std::atomic<bool>* requested) : previous_(g_cancel_flag.exchange(requested)) {}
CancelWrites::~CancelWrites() { g_cancel_flag.store(previous_); }

void throw_if_writes_cancelled(const std::filesystem::path& destination) {
  if (writes_cancelled()) throw cancelled_error(destination);
}

AtomicFileWriter::AtomicFileWriter(std::filesystem::path destination)
    : destination_(std::move(destination)) {
  if (destination_.empty() || !destination_.has_filename())
    throw FileWriteError(destination_, "cannot write '" + destination_.string() +
                                           "': the path does not name a file");
  target_ = resolve_file_target(destination_);
  for (int attempt = 0; attempt < 16; ++attempt) {
    temp_ = temp_name_for(target_, attempt);
    // 0666 and the process umask: the final file gets the usual permissions.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) return;
    if (errno != EEXIST) break;
  }
  const int err = errno;
  const std::filesystem::path folder = temp_.parent_path();
  temp_.clear();
  throw FileWriteError(destination_, "cannot write " + destination_.string() +
                                         ": cannot create a file in folder '" + folder.string() +
                                         "': " + std::strerror(err));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  discard();
  throw FileWriteError(destination_, "cannot write " + destination_.string() + ": " + what +
                                         ": " + std::strerror(err) +
                                         " (nothing was written)");
}

void AtomicFileWriter::write(const void* data, size_t size) {
  if (fd_ < 0) throw FileWriteError(destination_, "write to " + destination_.string() +
                                                      " after commit or failure");
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    if (writes_cancelled()) {
      discard();
      throw cancelled_error(destination_);
    }
    const ssize_t n = ::write(fd_, p, std::min(size, kWriteChunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed after " + std::to_string(written_) + " bytes", errno);
    }
    if (n == 0) fail("write made no progress after " + std::to_string(written_) + " bytes", EIO);
    p += n;
    size -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
}

void AtomicFileWriter::commit(const std::function<void()>& check_before_rename) {
  if (fd_ < 0) throw FileWriteError(destination_, "commit of " + destination_.string() +
                                                      " after commit or failure");
  hold_before_rename_for_tests(temp_);
  if (writes_cancelled()) {
    discard();
    throw cancelled_error(destination_);
  }
  // Flush before the rename, so that a crash never leaves a complete-looking empty file.
  if (::fsync(fd_) != 0) fail("flushing to disk failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing failed", errno);
  // Again just before the rename: a long write gives time to put a device or FIFO there.
  try {
    check_write_target(target_, WriteTarget::file);
    if (check_before_rename) check_before_rename();
  } catch (...) {
    discard();
    throw;
  }
  if (writes_cancelled()) {
    discard();
    throw cancelled_error(destination_);
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail("renaming into place failed", errno);
  committed_ = true;
  temp_.clear();
}

}  // namespace ts
