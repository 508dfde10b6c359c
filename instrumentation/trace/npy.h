// .npy files (numpy's format, versions 1.0, 2.0 and 3.0): a reader that checks everything and
// an atomic writer. Little-endian, C order only; dtypes <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2
// <u4 <u8 |b1 (bfloat16 has no numpy dtype). Used for exports and for kernels' inputs.
//
//   write_npy("err.npy", ElemType::F32, {rows, cols}, data.data());
//   NpyArray a = read_npy("q.npy");        // a.type, a.shape, a.bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "instrumentation/trace/elem_type.h"
#include "instrumentation/trace/file_error.h"

namespace ts {

struct NpyArray {
  ElemType type = ElemType::F32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;  // numel * elem_size(type), C order, little-endian

  int64_t numel() const;
};

// Throws FileReadError (cannot open) or NpyFormatError naming the file and the problem:
// not .npy, unsupported version or dtype, big-endian ("convert with a.astype('<f4')"),
// Fortran order ("save np.ascontiguousarray(a)"), a size that does not match the shape.
NpyArray read_npy(const std::filesystem::path& path);
NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& display_name);

// The header of a .npy file, read before its data (so that a file of the wrong dtype or shape
// is refused without reading gigabytes): numpy writes a few hundred bytes; more than this is
// refused.
inline constexpr uint64_t kNpyMaxHeaderBytes = uint64_t{1} << 20;
// The bytes that hold the length of the header: magic, version, length field.
inline constexpr size_t kNpyPreambleBytes = 12;

struct NpyLayout {
  ElemType type = ElemType::F32;
  std::vector<int64_t> shape;
  uint64_t data_start = 0;  // offset of the data in the file
  uint64_t data_bytes = 0;  // numel * elem_size(type)
};

// From the first min(file size, kNpyPreambleBytes) bytes: the size of the whole header
// (magic to the end of the dictionary; the data start there). Throws NpyFormatError: not a
// .npy, unsupported version, header past the end of the file or over kNpyMaxHeaderBytes.
uint64_t npy_header_size(std::span<const std::byte> preamble, uint64_t file_size, const std::string& display_name);
// From the whole header (npy_header_size bytes): dtype, shape, where the data lie. Throws
// NpyFormatError as parse_npy does, including a file whose size does not match the shape.
NpyLayout parse_npy_layout(std::span<const std::byte> header, uint64_t file_size, const std::string& display_name);

// Throws FileWriteError (BF16, a negative or overflowing shape, or an I/O failure; no file is
// left behind then). `data` holds numel * elem_size(type) bytes.
void write_npy(const std::filesystem::path& path, ElemType type, std::span<const int64_t> shape,
               const void* data);

// The numpy dtype string of a type ("<f4"), or "" for BF16.
std::string npy_descr(ElemType type);

}  // namespace ts
