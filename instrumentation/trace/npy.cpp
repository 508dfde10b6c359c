#include "instrumentation/trace/npy.h"

#include <bit>
#include <cstring>
#include <string_view>

#include "instrumentation/trace/atomic_file.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/npy_header.h"

namespace ts {

static_assert(std::endian::native == std::endian::little, ".npy data are read as little-endian");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct Descr {
  std::string_view text;  // as numpy writes it
  ElemType type;
};
constexpr Descr kDescrs[] = {
    {"|b1", ElemType::BOOL}, {"|u1", ElemType::U8},  {"|i1", ElemType::I8},
    {"<i2", ElemType::I16},  {"<u2", ElemType::U16}, {"<i4", ElemType::I32},
    {"<u4", ElemType::U32},  {"<i8", ElemType::I64}, {"<u8", ElemType::U64},
    {"<f2", ElemType::F16},  {"<f4", ElemType::F32}, {"<f8", ElemType::F64},
};

ElemType type_of_descr(const std::string& descr, const std::string& name) {
  const auto fail = [&](const std::string& what) {
    throw NpyFormatError(name, name + ": " + what);
  };
  // One-byte types carry no byte order; numpy writes '|' but '<' and '=' mean the same there.
  std::string d = descr;
  if (d.size() == 3 && d[2] == '1' && (d[0] == '<' || d[0] == '=')) d[0] = '|';
  if (d.size() == 3 && d[0] == '=') d[0] = '<';  // native order: this host is little-endian
  for (const Descr& x : kDescrs)
    if (x.text == d) return x.type;
  if (!d.empty() && d[0] == '>')
    fail("dtype '" + descr + "' is big-endian, which is not supported; save it little-endian, "
         "e.g. np.save(path, a.astype(a.dtype.newbyteorder('<')))");
  fail("unsupported dtype '" + descr + "' (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 "
       "<u4 <u8 |b1)");
  return ElemType::U8;  // unreachable
}

}  // namespace

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string npy_descr(ElemType type) {
  for (const Descr& x : kDescrs)
    if (x.type == type) return std::string(x.text);
  return {};
}

NpyArray read_npy(const std::filesystem::path& path) {
  const auto file = FileBytes::read(path);
  return parse_npy(file->bytes(), path.string());
}

uint64_t npy_header_size(std::span<const std::byte> bytes, uint64_t file_size, const std::string& name) {
  const auto fail = [&](const std::string& what) {
    throw NpyFormatError(name, name + ": " + what);
  };
  const auto u8 = [&](size_t i) { return std::to_integer<uint32_t>(bytes[i]); };
  if (bytes.size() < kMagicSize + 2 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    fail("not a .npy file (no \\x93NUMPY magic)");
  const uint32_t major = u8(6), minor = u8(7);
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    fail(".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
         " is not supported (1.0, 2.0 and 3.0 are)");
  const size_t length_size = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + length_size) fail("file ends inside the header (truncated?)");
  uint64_t dict_size = 0;
  for (size_t i = 0; i < length_size; ++i) dict_size |= uint64_t{u8(8 + i)} << (8 * i);
  const uint64_t header_size = 8 + length_size + dict_size;
  if (header_size > file_size)
    fail("header length " + std::to_string(dict_size) + " goes past the end of the file "
         "(truncated?)");
  if (header_size > kNpyMaxHeaderBytes)
    fail("header length " + std::to_string(dict_size) + " is over the limit of " +
         std::to_string(kNpyMaxHeaderBytes) + " bytes (numpy writes a few hundred)");
  return header_size;
}

NpyLayout parse_npy_layout(std::span<const std::byte> bytes, uint64_t file_size, const std::string& name) {
  const auto fail = [&](const std::string& what) {
    throw NpyFormatError(name, name + ": " + what);
  };
  const uint64_t header_size = npy_header_size(bytes, file_size, name);
  if (bytes.size() < header_size) fail("file ends inside the header (truncated?)");
  const size_t length_size = std::to_integer<uint32_t>(bytes[6]) == 1 ? 2 : 4;
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8 + length_size,
                              header_size - 8 - length_size);
  const NpyHeaderDict dict = parse_npy_header_dict(text, name);
  if (dict.fortran_order)
    fail("the array is in Fortran order, which is not supported; save a C-order copy: "
         "np.save(path, np.ascontiguousarray(a))");
  NpyLayout layout;
  layout.type = type_of_descr(dict.descr, name);
  uint64_t size = elem_size(layout.type);
  for (uint64_t d : dict.shape) {
    if (d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(size, d, &size))
      fail("shape is too large: its byte size overflows");
    layout.shape.push_back(static_cast<int64_t>(d));
  }
  layout.data_start = header_size;
  layout.data_bytes = size;
  const uint64_t available = file_size - header_size;
  if (available < size)
    fail("data hold " + std::to_string(available) + " bytes but dtype " + dict.descr +
         " and the shape need " + std::to_string(size) + " (truncated?)");
  if (available > size)
    fail(std::to_string(available - size) + " unexpected bytes after the data");
  return layout;
}

NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& name) {
  NpyLayout layout = parse_npy_layout(bytes, bytes.size(), name);
  NpyArray array;
  array.type = layout.type;
  array.shape = std::move(layout.shape);
  array.bytes.assign(bytes.begin() + static_cast<ptrdiff_t>(layout.data_start), bytes.end());
  return array;
}

void write_npy(const std::filesystem::path& path, ElemType type, std::span<const int64_t> shape,
               const void* data) {
  const auto refuse = [&](const std::string& what) {
    throw FileWriteError(path, "cannot write " + path.string() + ": " + what);
  };
  const std::string descr = npy_descr(type);
  if (descr.empty())
    refuse("dtype " + std::string(to_string(type)) + " has no .npy equivalent (convert it to "
           "float32 first)");
  uint64_t size = elem_size(type);
  std::string dims;
  for (int64_t d : shape) {
    if (d < 0) refuse("negative dimension in the shape");
    if (__builtin_mul_overflow(size, static_cast<uint64_t>(d), &size))
      refuse("the array is too large: its byte size overflows");
    dims += std::to_string(d) + ", ";
  }
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // (3, 4); a 1-D shape keeps "(3,)"
  else if (shape.size() == 1) dims.pop_back();
  if (size > 0 && data == nullptr) refuse("no data given");

  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims +
                       "), }";
  // Version 1.0 (2-byte length) unless the header is too long; data start 64-aligned.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string head(kMagic, kMagicSize);
  head += static_cast<char>(v2 ? 2 : 1);
  head += '\0';
  for (size_t i = 0; i < prefix - 8; ++i) head += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  head += header;

  AtomicFileWriter out(path);
  out.write(head.data(), head.size());
  out.write(data, size);
  out.commit();
}

}  // namespace ts
