// Reading files that another process may change while (or after) we read them. The readers
// never map a file: a shared mapping of a file that someone truncates raises SIGBUS on the
// next access, and one rewritten in place changes values after they were validated. Instead
// every file is read into memory this process owns, in one pass, and the read fails with a
// FileReadError ("the file changed while it was read") when the file's size or modification
// time moved during it or a read came back short. What a reader validated then stays valid.
//
//   auto bytes = FileBytes::read("run.trace.safetensors");   // the whole file, owned
//   InputFile f("q.npy");                                     // open, to read parts of it
//   f.read_at(0, header, 128);  ...  f.check_unchanged();
//   std::string text = read_small_file(store, 1 << 20);       // settings, lists: capped
//
// Opening never blocks and accepts regular files only (FIFOs, devices, sockets and folders are
// refused: a FIFO would hang the reader, /dev/zero would never end).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

// Bytes a reader parses, kept alive as long as any view into them: a file read into memory,
// or bytes built in memory (tests, the fuzz target).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::span<const std::byte> bytes() const = 0;
};

// An open regular file. Every read is checked against the size seen at opening.
class InputFile {
 public:
  // Throws FileReadError naming the path: missing, unreadable, a folder, not a regular file.
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint64_t size() const { return static_cast<uint64_t>(opened_.st_size); }
  dev_t device() const { return opened_.st_dev; }
  ino_t inode() const { return opened_.st_ino; }

  // Reads exactly `size` bytes at `offset`; the range must lie within size(). Throws
  // FileReadError when the file ends early (it changed while it was read) or the OS fails.
  void read_at(uint64_t offset, void* into, size_t size) const;
  // Throws FileReadError when the file's size or modification time differ from what they were
  // at opening, or it has grown past size().
  void check_unchanged() const;
  // The FileReadError for "the file changed while it was read".
  [[noreturn]] void changed() const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  struct stat opened_ {};
};

// A whole file in memory this process owns (aligned for any element type).
class FileBytes final : public ByteSource {
 public:
  // Reads all of `path`. Throws FileReadError: cannot open, not a regular file, larger than
  // max_bytes or than the memory available (check_fits_in_memory), changed while it was read.
  static std::shared_ptr<const FileBytes> read(const std::filesystem::path& path,
                                               uint64_t max_bytes = UINT64_MAX);
  ~FileBytes() override;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  std::span<const std::byte> bytes() const override { return {data_, size_}; }

 private:
  FileBytes(std::byte* data, size_t size) : data_(data), size_(size) {}
  std::byte* data_;
  size_t size_;
};

class MemoryBytes final : public ByteSource {
 public:
  explicit MemoryBytes(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  std::span<const std::byte> bytes() const override { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

// A small file (a settings store, a list, a script) as text: regular files only, at most
// `max_bytes` (FileReadError naming the path and the limit beyond it).
std::string read_small_file(const std::filesystem::path& path, uint64_t max_bytes);

// What a file is, from its st_mode, for messages: "a regular file", "a folder", "a FIFO (named
// pipe)", "a character device", "a block device", "a socket", "a symbolic link".
std::string_view file_type_name(mode_t mode);

// Throws FileReadError when `bytes` are more than the memory available now (MemAvailable: free
// memory and reclaimable caches; a clear message instead of a read that the OS kills the
// process for).
void check_fits_in_memory(const std::filesystem::path& path, uint64_t bytes);

}  // namespace ts
