#include "instrumentation/trace/tensor_files.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/mapped_file.h"
#include "instrumentation/trace/npy.h"

namespace ts {

namespace {

constexpr std::string_view kNpyMagic = "\x93NUMPY";

HostTensor make_host_tensor(DType dtype, std::vector<int64_t> shape, std::span<const std::byte> b) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(b.begin(), b.end());
  return t;
}

// Incremental SHA-256 over OpenSSL's EVP interface.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("SHA-256: OpenSSL could not initialise a digest");
  }
  void update(const void* data, size_t size) {
    if (EVP_DigestUpdate(ctx_.get(), data, size) != 1)
      throw std::runtime_error("SHA-256: OpenSSL digest update failed");
  }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), digest, &size) != 1)
      throw std::runtime_error("SHA-256: OpenSSL digest failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < size; ++i) {
      out += kHex[digest[i] >> 4];
      out += kHex[digest[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

}  // namespace

ElemType elem_type_of_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return ElemType::F32;
    case DType::f16: return ElemType::F16;
    case DType::bf16: return ElemType::BF16;
  }
  return ElemType::F32;
}

std::optional<DType> dtype_of_elem_type(ElemType type) {
  switch (type) {
    case ElemType::F32: return DType::f32;
    case ElemType::F16: return DType::f16;
    case ElemType::BF16: return DType::bf16;
    default: return std::nullopt;
  }
}

TensorToWrite tensor_to_write(std::string name, const HostTensor& tensor) {
  return {std::move(name), elem_type_of_dtype(tensor.dtype), tensor.shape, tensor.bytes.data()};
}

HostTensor read_host_tensor(const SafetensorsFile& file, const TensorInfo& tensor) {
  const std::optional<DType> dtype = dtype_of_elem_type(tensor.type);
  if (!dtype)
    throw TensorFileError(file.display_name(),
                          file.display_name() + ": tensor '" + tensor.name + "' has dtype " +
                              std::string(to_string(tensor.type)) +
                              "; tensors for the kernels must be F32, F16 or BF16");
  return make_host_tensor(*dtype, tensor.shape, file.bytes(tensor));
}

HostTensor load_tensor_file(const std::filesystem::path& path, std::string_view name) {
  const std::string shown = path.string();
  const auto source = MappedFile::open(path);
  const std::span<const std::byte> bytes = source->bytes();
  const bool is_npy = bytes.size() >= kNpyMagic.size() &&
                      std::memcmp(bytes.data(), kNpyMagic.data(), kNpyMagic.size()) == 0;
  if (is_npy) {
    if (!name.empty())
      throw TensorFileError(path, shown + ": a .npy file holds one array; a tensor name ('" +
                                      std::string(name) + "') applies only to .safetensors");
    NpyArray a = parse_npy(bytes, shown);
    if (a.type != ElemType::F32 && a.type != ElemType::F16)
      throw TensorFileError(path, shown + ": dtype " + npy_descr(a.type) +
                                      " is not supported for kernel inputs; save float32 or "
                                      "float16 (e.g. a.astype(np.float32))");
    HostTensor t;
    t.dtype = a.type == ElemType::F32 ? DType::f32 : DType::f16;
    t.shape = std::move(a.shape);
    t.bytes = std::move(a.bytes);
    return t;
  }
  if (bytes.size() < 9 || std::to_integer<char>(bytes[8]) != '{')
    throw TensorFileError(path, shown + ": neither a .npy nor a .safetensors file");
  const SafetensorsFile file = SafetensorsFile::parse(source, shown);
  if (name.empty()) {
    if (file.tensors().size() != 1) {
      std::string names;
      for (const TensorInfo& t : file.tensors()) names += (names.empty() ? "" : ", ") + t.name;
      throw TensorFileError(path, shown + ": holds " + std::to_string(file.tensors().size()) +
                                      " tensors; name the one to use (" + names + ")");
    }
    return read_host_tensor(file, file.tensors().front());
  }
  const TensorInfo* t = file.find(name);
  if (t == nullptr) {
    std::string names;
    for (const TensorInfo& x : file.tensors()) names += (names.empty() ? "" : ", ") + x.name;
    throw TensorFileError(path, shown + ": no tensor named '" + std::string(name) +
                                    "' (it holds: " + names + ")");
  }
  return read_host_tensor(file, *t);
}

std::string sha256_hex(std::span<const std::byte> bytes) {
  Sha256 sha;
  sha.update(bytes.data(), bytes.size());
  return sha.hex();
}

std::string sha256_file(const std::filesystem::path& path) {
  // Read in chunks rather than mapping: inputs may be larger than the address space we want
  // to spend, and a read error is then an error, not a SIGBUS.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  const auto fail = [&](const std::string& what) {
    throw FileReadError(path, "cannot read " + path.string() + ": " + what);
  };
  if (fd < 0) fail(std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (std::filesystem::is_directory(path)) fail("it is a directory, not a file");
  if (!std::filesystem::is_regular_file(path)) fail("not a regular file");
  Sha256 sha;
  std::vector<char> buffer(size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(std::strerror(errno));
    }
    if (n == 0) break;
    sha.update(buffer.data(), static_cast<size_t>(n));
  }
  return sha.hex();
}

}  // namespace ts
