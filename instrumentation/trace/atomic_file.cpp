#include "instrumentation/trace/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "instrumentation/trace/file_error.h"

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

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path destination)
    : destination_(std::move(destination)) {
  if (destination_.empty() || !destination_.has_filename())
    throw FileWriteError(destination_, "cannot write '" + destination_.string() +
                                           "': the path does not name a file");
  for (int attempt = 0; attempt < 16; ++attempt) {
    temp_ = temp_name_for(destination_, attempt);
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
    const ssize_t n = ::write(fd_, p, size);
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

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw FileWriteError(destination_, "commit of " + destination_.string() +
                                                      " after commit or failure");
  // Flush before the rename, so that a crash never leaves a complete-looking empty file.
  if (::fsync(fd_) != 0) fail("flushing to disk failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing failed", errno);
  if (::rename(temp_.c_str(), destination_.c_str()) != 0) fail("renaming into place failed", errno);
  committed_ = true;
  temp_.clear();
}

}  // namespace ts
