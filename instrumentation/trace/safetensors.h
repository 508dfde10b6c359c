// safetensors files: a general writer and a hostile-input reader.
//
// Format (huggingface safetensors): 8-byte little-endian header length N; N bytes of UTF-8
// JSON, an object {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
// {string: string}}, padded with spaces; then the data buffer, which the tensors' byte ranges
// (relative to its start) must cover exactly: no overlap, no hole. Little-endian, C order.
//
// The writer streams each tensor from the caller's memory (no copy) into an AtomicFileWriter.
// It places every tensor at a multiple of its element size (largest tensor first when that
// allows it, else largest elements first) and pads the header with spaces so that the data
// buffer starts 8-aligned (page-aligned in files of 1 MiB of data or more): the reader's
// views need no copy, and large files are written as whole pages. The reader reads the whole
// file into memory the process owns (file_bytes.h: no mapping, so a file changed by another
// program after it was read changes nothing that was checked) and checks every header field
// before anything is used; each defect is a TraceFormatError naming the file, the tensor and
// the problem.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "instrumentation/trace/elem_type.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/file_bytes.h"

namespace ts {

// The reader refuses larger headers (the reference implementation's limit too).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = uint64_t{100} << 20;
// ... and shapes of more dimensions (numpy allows 32 or 64).
inline constexpr size_t kSafetensorsMaxRank = 64;

// The header length a file's first 8 bytes give, checked against the file's size and the
// limit above. Throws TraceFormatError whose message begins with `display_name`.
uint64_t safetensors_header_length(std::span<const std::byte> first_bytes, uint64_t file_size,
                                   const std::string& display_name);

// A tensor to write. `data` points to numel * elem_size(type) bytes (C order, little-endian)
// that stay valid during write_safetensors; they are streamed, never copied.
struct TensorToWrite {
  std::string name;
  ElemType type = ElemType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// Writes `tensors` and `metadata` to `path` atomically. Throws FileWriteError naming the path
// when a name repeats, is "__metadata__" or is not valid UTF-8, a shape is negative or
// overflows, or the file cannot be written (then no file, temporary or final, is left).
// `progress`, when given, is told the bytes written of all after every few MiB;
// `check_before_rename` is AtomicFileWriter::commit's.
using WriteProgress = std::function<void(uint64_t written, uint64_t total)>;
void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata, const WriteProgress& progress = {},
                       const std::function<void()>& check_before_rename = {});

// One tensor of a file, as its (checked) header describes it.
struct TensorInfo {
  std::string name;
  ElemType type = ElemType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data buffer

  int64_t numel() const;
  uint64_t size_bytes() const { return end - begin; }
};

// Typed, read-only elements of one tensor: a view into the file's bytes, or a copy when the file
// placed the tensor at an address misaligned for T. Keeps its storage alive.
template <typename T>
class TensorView {
 public:
  TensorView() = default;
  std::span<const T> span() const { return data_; }
  const T* data() const { return data_.data(); }
  size_t size() const { return data_.size(); }
  const T& operator[](size_t i) const { return data_[i]; }
  const std::vector<int64_t>& shape() const { return shape_; }
  bool is_copy() const { return is_copy_; }

 private:
  friend class SafetensorsFile;
  std::span<const T> data_;
  std::vector<int64_t> shape_;
  std::shared_ptr<const void> owner_;
  bool is_copy_ = false;
};

class SafetensorsFile {
 public:
  // Reads `path` and checks it. Throws FileReadError (cannot open, changed while it was read)
  // or TraceFormatError.
  static SafetensorsFile open(const std::filesystem::path& path);
  // Checks bytes already in memory; `display_name` stands for the path in error messages.
  static SafetensorsFile parse(std::shared_ptr<const ByteSource> source, std::string display_name);

  const std::string& display_name() const { return name_; }
  uint64_t file_size() const { return source_->bytes().size(); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // sorted by name

  const TensorInfo* find(std::string_view name) const;
  // Throws TraceFormatError "no tensor named ..." when absent.
  const TensorInfo& at(std::string_view name) const;
  std::span<const std::byte> bytes(const TensorInfo& tensor) const;

  // Throws TraceFormatError when the tensor's dtype is not T's.
  template <typename T>
  TensorView<T> view(const TensorInfo& tensor) const;
  template <typename T>
  TensorView<T> view(std::string_view name) const {
    return view<T>(at(name));
  }

  // A TraceFormatError whose message starts with this file's name.
  TraceFormatError error(const std::string& what) const;

 private:
  void check_type(const TensorInfo& tensor, ElemType expected) const;

  std::shared_ptr<const ByteSource> source_;
  std::string name_;
  uint64_t data_start_ = 0;  // offset of the data buffer within the file
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

template <typename T>
TensorView<T> SafetensorsFile::view(const TensorInfo& tensor) const {
  static_assert(elem_type_of<T>.has_value(), "no safetensors dtype for this element type");
  check_type(tensor, *elem_type_of<T>);
  const std::span<const std::byte> b = bytes(tensor);
  const size_t count = b.size() / sizeof(T);
  TensorView<T> v;
  v.shape_ = tensor.shape;
  if (reinterpret_cast<uintptr_t>(b.data()) % alignof(T) == 0) {
    v.data_ = std::span<const T>(reinterpret_cast<const T*>(b.data()), count);
    v.owner_ = source_;
  } else {
    auto copy = std::make_shared<std::vector<T>>(count);
    if (count > 0) std::memcpy(copy->data(), b.data(), count * sizeof(T));
    v.data_ = std::span<const T>(*copy);
    v.owner_ = std::move(copy);
    v.is_copy_ = true;
  }
  return v;
}

}  // namespace ts
