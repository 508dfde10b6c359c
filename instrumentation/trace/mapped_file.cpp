#include "instrumentation/trace/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "instrumentation/trace/file_error.h"

namespace ts {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw FileReadError(path, "cannot read " + path.string() + ": " + what);
}

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, std::strerror(errno));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "it is a directory, not a file");
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0));
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) fail(path, std::string("mmap failed: ") + std::strerror(errno));
  return std::shared_ptr<const MappedFile>(new MappedFile(static_cast<const std::byte*>(p), size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace ts
