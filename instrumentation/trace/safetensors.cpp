#include "instrumentation/trace/safetensors.h"

#include <algorithm>
#include <bit>
#include <set>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/atomic_file.h"
#include "instrumentation/trace/safetensors_header.h"

namespace ts {

static_assert(std::endian::native == std::endian::little,
              "safetensors data are little-endian; a big-endian host would need byte swaps");

namespace {

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& what) {
  throw FileWriteError(path, "cannot write " + path.string() + ": " + what);
}

uint64_t byte_size_for_writing(const std::filesystem::path& path, const TensorToWrite& t) {
  uint64_t bytes = elem_size(t.type);
  for (int64_t d : t.shape) {
    if (d < 0) refuse(path, "tensor '" + t.name + "' has a negative dimension");
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      refuse(path, "tensor '" + t.name + "' is too large: its byte size overflows");
  }
  if (bytes > 0 && t.data == nullptr) refuse(path, "tensor '" + t.name + "' has no data");
  return bytes;
}

// Every tensor must sit at a multiple of its element size (the spec allows no padding between
// tensors), so the reader's views need no copy. Largest tensor first when that keeps every
// offset aligned: the bulk of the file then starts at the (page-aligned) data buffer, which
// makes writing it a copy of whole pages. Otherwise, largest elements first, always aligned.
void order_for_alignment(std::vector<const TensorToWrite*>& order, std::vector<uint64_t>& sizes) {
  std::vector<size_t> idx(order.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  const auto aligned = [&] {
    uint64_t offset = 0;
    for (size_t i : idx) {
      if (offset % elem_size(order[i]->type) != 0) return false;
      offset += sizes[i];
    }
    return true;
  };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  if (!aligned())
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return elem_size(order[a]->type) > elem_size(order[b]->type);
    });
  std::vector<const TensorToWrite*> o;
  std::vector<uint64_t> s;
  for (size_t i : idx) {
    o.push_back(order[i]);
    s.push_back(sizes[i]);
  }
  order = std::move(o);
  sizes = std::move(s);
}

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // the reader checked that the byte size fits
  return n;
}

void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata, const WriteProgress& progress,
                       const std::function<void()>& check_before_rename) {
  std::vector<const TensorToWrite*> order;
  std::set<std::string_view> names;
  for (const TensorToWrite& t : tensors) {
    if (t.name == "__metadata__") refuse(path, "\"__metadata__\" cannot name a tensor");
    if (!names.insert(t.name).second) refuse(path, "tensor name '" + t.name + "' repeats");
    order.push_back(&t);
  }
  std::vector<uint64_t> sizes;
  for (const TensorToWrite* t : order) sizes.push_back(byte_size_for_writing(path, *t));
  order_for_alignment(order, sizes);

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    auto& meta = header["__metadata__"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const TensorToWrite* t = order[i];
    const uint64_t bytes = sizes[i];
    header[t->name] = {{"dtype", std::string(to_string(t->type))},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {  // a name or a metadata string is not UTF-8
    refuse(path, std::string("a tensor name or metadata string is not valid UTF-8 (") + e.what() +
                     ")");
  }
  // Spaces (which the format allows) so that the data buffer starts aligned in the file: to
  // 8 bytes at least, and to a page for large files, where the kernel copies whole pages.
  const uint64_t align = offset >= (uint64_t{1} << 20) ? 4096 : 8;
  text.append((align - (8 + text.size()) % align) % align, ' ');

  AtomicFileWriter out(path);
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(uint64_t{text.size()} >> (8 * i));
  out.write(length, sizeof length);
  out.write(text.data(), text.size());
  constexpr uint64_t kProgressStep = uint64_t{8} << 20;
  const uint64_t total = 8 + text.size() + offset;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto* data = static_cast<const char*>(order[i]->data);
    for (uint64_t at = 0; at < sizes[i]; at += kProgressStep) {
      out.write(data + at, static_cast<size_t>(std::min(kProgressStep, sizes[i] - at)));
      if (progress) progress(out.bytes_written(), total);
    }
  }
  out.commit(check_before_rename);
}

uint64_t safetensors_header_length(std::span<const std::byte> bytes, uint64_t file_size,
                                   const std::string& name) {
  const auto error = [&](const std::string& what) { return TraceFormatError(name, name + ": " + what); };
  if (file_size < 8 || bytes.size() < 8)
    throw error("file of " + std::to_string(file_size) + " bytes is too short to be a safetensors file (truncated?)");
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= std::to_integer<uint64_t>(bytes[i]) << (8 * i);
  if (header_size > kSafetensorsMaxHeaderBytes)
    throw error("header length " + std::to_string(header_size) + " exceeds the limit of " +
                std::to_string(kSafetensorsMaxHeaderBytes) + " bytes (not a safetensors file?)");
  if (header_size > file_size - 8)
    throw error("header length " + std::to_string(header_size) + " goes past the end of the " +
                std::to_string(file_size) + "-byte file (truncated?)");
  return header_size;
}

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path) {
  const std::string name = path.string();
  const InputFile file(path);
  std::byte length[8] = {};
  file.read_at(0, length, static_cast<size_t>(std::min<uint64_t>(file.size(), sizeof length)));
  const uint64_t header_size = safetensors_header_length(length, file.size(), name);
  std::string text(static_cast<size_t>(header_size), '\0');
  file.read_at(8, text.data(), text.size());
  return parse_safetensors_header(text, file.size() - 8 - header_size, name);
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  // The header first: a damaged or hostile file is refused before its data are read. Then all
  // of it, into memory of our own, checked again there (file_bytes.h): what was read first may
  // have changed since.
  (void)read_safetensors_header(path);
  return parse(FileBytes::read(path), path.string());
}

SafetensorsFile SafetensorsFile::parse(std::shared_ptr<const ByteSource> source,
                                       std::string display_name) {
  SafetensorsFile file;
  file.source_ = std::move(source);
  file.name_ = std::move(display_name);
  const std::span<const std::byte> bytes = file.source_->bytes();
  const uint64_t header_size = safetensors_header_length(bytes, bytes.size(), file.name_);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, header_size);
  file.data_start_ = 8 + header_size;
  SafetensorsHeader header = parse_safetensors_header(text, bytes.size() - file.data_start_, file.name_);
  file.tensors_ = std::move(header.tensors);
  file.metadata_ = std::move(header.metadata);
  return file;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

const TensorInfo& SafetensorsFile::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw error("no tensor named '" + std::string(name) + "'");
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorInfo& tensor) const {
  return source_->bytes().subspan(data_start_ + tensor.begin, tensor.size_bytes());
}

TraceFormatError SafetensorsFile::error(const std::string& what) const {
  return TraceFormatError(name_, name_ + ": " + what);
}

void SafetensorsFile::check_type(const TensorInfo& tensor, ElemType expected) const {
  if (tensor.type != expected)
    throw error("tensor '" + tensor.name + "' has dtype " + std::string(to_string(tensor.type)) +
                ", expected " + std::string(to_string(expected)));
}

}  // namespace ts
