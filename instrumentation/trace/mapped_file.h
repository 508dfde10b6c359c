// A read-only memory mapping of a whole file: the readers' zero-copy storage. Opening never
// blocks (FIFOs and devices are refused) and any failure is a FileReadError naming the path
// and the OS error.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace ts {

// Bytes a reader parses, kept alive as long as any view into them: a file mapping, or bytes
// held in memory (tests, the fuzz target).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::span<const std::byte> bytes() const = 0;
};

class MappedFile final : public ByteSource {
 public:
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);
  ~MappedFile() override;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const override { return {data_, size_}; }

 private:
  MappedFile(const std::byte* data, size_t size) : data_(data), size_(size) {}
  const std::byte* data_;
  size_t size_;
};

class MemoryBytes final : public ByteSource {
 public:
  explicit MemoryBytes(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  std::span<const std::byte> bytes() const override { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

}  // namespace ts
