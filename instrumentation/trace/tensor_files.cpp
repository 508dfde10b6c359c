#include "instrumentation/trace/tensor_files.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/safetensors_header.h"

namespace ts {

namespace {

constexpr std::string_view kNpyMagic = "\x93NUMPY";

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256: OpenSSL could not initialise a digest");
}

void Sha256::update(const void* data, size_t size) {
  if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) throw std::runtime_error("SHA-256: OpenSSL digest update failed");
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), digest, &size) != 1) throw std::runtime_error("SHA-256: OpenSSL digest failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

namespace {

std::string tensor_names(const std::vector<TensorInfo>& tensors) {
  std::string names;
  for (const TensorInfo& t : tensors) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

}  // namespace

TensorFile::TensorFile(const std::filesystem::path& path) : file_(path) {
  const std::string shown = path.string();
  const uint64_t size = file_.size();
  std::byte preamble[kNpyPreambleBytes] = {};
  const size_t got = static_cast<size_t>(std::min<uint64_t>(size, sizeof preamble));
  file_.read_at(0, preamble, got);
  const std::span<const std::byte> first(preamble, got);
  is_npy_ = got >= kNpyMagic.size() && std::memcmp(preamble, kNpyMagic.data(), kNpyMagic.size()) == 0;
  if (is_npy_) {
    header_.resize(static_cast<size_t>(npy_header_size(first, size, shown)));
    file_.read_at(0, header_.data(), header_.size());
    NpyLayout layout = parse_npy_layout(header_, size, shown);
    tensors_.push_back({"", layout.type, std::move(layout.shape), 0, layout.data_bytes});
    return;
  }
  if (got < 9 || std::to_integer<char>(preamble[8]) != '{')
    throw TensorFileError(path, shown + ": neither a .npy nor a .safetensors file");
  const uint64_t json_size = safetensors_header_length(first, size, shown);
  header_.resize(static_cast<size_t>(8 + json_size));
  file_.read_at(0, header_.data(), header_.size());
  const std::string_view json(reinterpret_cast<const char*>(header_.data()) + 8, json_size);
  tensors_ = parse_safetensors_header(json, size - header_.size(), shown).tensors;
}

const TensorInfo& TensorFile::select(std::string_view name) const {
  const std::string shown = path().string();
  if (is_npy_) {
    if (!name.empty())
      throw TensorFileError(path(), shown + ": a .npy file holds one array; a tensor name ('" + std::string(name) +
                                        "') applies only to .safetensors");
    return tensors_.front();
  }
  if (name.empty()) {
    if (tensors_.size() != 1)
      throw TensorFileError(path(), shown + ": holds " + std::to_string(tensors_.size()) +
                                        " tensors; name the one to use (" + tensor_names(tensors_) + ")");
    return tensors_.front();
  }
  for (const TensorInfo& t : tensors_)
    if (t.name == name) return t;
  throw TensorFileError(path(), shown + ": no tensor named '" + std::string(name) + "' (it holds: " +
                                    tensor_names(tensors_) + ")");
}

DType TensorFile::kernel_dtype(const TensorInfo& tensor) const {
  const std::string shown = path().string();
  const std::optional<DType> dtype = dtype_of_elem_type(tensor.type);
  if (is_npy_ && (!dtype || *dtype == DType::bf16))
    throw TensorFileError(path(), shown + ": dtype " + npy_descr(tensor.type) +
                                      " is not supported for kernel inputs; save float32 or "
                                      "float16 (e.g. a.astype(np.float32))");
  if (!dtype)
    throw TensorFileError(path(), shown + ": tensor '" + tensor.name + "' has dtype " +
                                      std::string(to_string(tensor.type)) +
                                      "; tensors for the kernels must be F32, F16 or BF16");
  return *dtype;
}

TensorFile::Contents TensorFile::read(std::span<const TensorInfo* const> wanted) const {
  Contents out;
  out.tensors.resize(wanted.size());
  uint64_t total = 0;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const TensorInfo* t = wanted[i];
    if (t < tensors_.data() || t >= tensors_.data() + tensors_.size())
      throw std::invalid_argument("TensorFile::read: a tensor of another file");
    if (__builtin_add_overflow(total, t->size_bytes(), &total)) total = UINT64_MAX;
    out.tensors[i].dtype = kernel_dtype(*t);
    out.tensors[i].shape = t->shape;
  }
  check_fits_in_memory(path(), total);
  // One pass over the file in order: the header, then each tensor of the data buffer (which
  // the tensors cover exactly), into the tensor that wants it or through a scratch buffer, all
  // of it hashed.
  Sha256 sha;
  sha.update(header_.data(), header_.size());
  std::vector<const TensorInfo*> in_file_order;
  for (const TensorInfo& t : tensors_) in_file_order.push_back(&t);
  std::sort(in_file_order.begin(), in_file_order.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  const uint64_t data_start = header_.size();
  std::vector<std::byte> scratch;
  for (const TensorInfo* t : in_file_order) {
    const uint64_t offset = data_start + t->begin;
    std::vector<std::byte>* first_reader = nullptr;
    for (size_t i = 0; i < wanted.size(); ++i) {
      if (wanted[i] != t) continue;
      if (first_reader == nullptr) {
        first_reader = &out.tensors[i].bytes;
        first_reader->resize(static_cast<size_t>(t->size_bytes()));
        file_.read_at(offset, first_reader->data(), first_reader->size());
        sha.update(first_reader->data(), first_reader->size());
      } else {
        out.tensors[i].bytes = *first_reader;  // the same tensor asked twice
      }
    }
    if (first_reader != nullptr) continue;
    scratch.resize(std::min<uint64_t>(t->size_bytes(), uint64_t{8} << 20));
    for (uint64_t done = 0; done < t->size_bytes();) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(scratch.size(), t->size_bytes() - done));
      file_.read_at(offset + done, scratch.data(), n);
      sha.update(scratch.data(), n);
      done += n;
    }
  }
  file_.check_unchanged();
  out.sha256 = sha.hex();
  return out;
}

HostTensor load_tensor_file(const std::filesystem::path& path, std::string_view name) {
  const TensorFile file(path);
  const TensorInfo* tensor = &file.select(name);
  return std::move(file.read(std::span(&tensor, 1)).tensors.front());
}

std::string sha256_hex(std::span<const std::byte> bytes) {
  Sha256 sha;
  sha.update(bytes.data(), bytes.size());
  return sha.hex();
}

std::string sha256_hex(std::span<const std::byte> bytes, const std::function<void(size_t)>& progress) {
  constexpr size_t kChunk = size_t{4} << 20;
  Sha256 sha;
  for (size_t at = 0; at < bytes.size(); at += kChunk) {
    const size_t n = std::min(kChunk, bytes.size() - at);
    sha.update(bytes.data() + at, n);
    if (progress) progress(n);
  }
  return sha.hex();
}

std::string sha256_file(const std::filesystem::path& path) {
  // Streamed in chunks: an input may be larger than the memory we want to spend on it.
  const InputFile file(path);
  Sha256 sha;
  std::vector<std::byte> buffer(static_cast<size_t>(std::min<uint64_t>(file.size(), uint64_t{1} << 20)));
  for (uint64_t done = 0; done < file.size();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), file.size() - done));
    file.read_at(done, buffer.data(), n);
    sha.update(buffer.data(), n);
    done += n;
  }
  file.check_unchanged();
  return sha.hex();
}

}  // namespace ts
