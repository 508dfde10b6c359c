// Tensors for the kernels' inputs from files, and file hashes for a trace's provenance.
//
//   HostTensor q = load_tensor_file("q.npy");                       // float32 / float16
//   HostTensor k = load_tensor_file("qkv.safetensors", "k");       // F32 / F16 / BF16
//   std::string h = sha256_file("q.npy");                          // 64 lowercase hex digits
//
// The format is recognised by content (.npy magic, else safetensors), not by extension. Files
// are read, never mapped, and a file that changes while it is read is an error (file_bytes.h).
// Errors name the path: FileReadError (missing, unreadable), NpyFormatError or
// TraceFormatError (damaged), TensorFileError (valid but unusable: dtype, missing name).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "instrumentation/trace/elem_type.h"
#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/host_tensor_entry.h"
#include "instrumentation/trace/safetensors.h"
#include "base/host_tensor.h"

struct evp_md_ctx_st;
using EVP_MD_CTX = evp_md_ctx_st;

namespace ts {

// A tensor file whose header has been read and checked but whose data have not: the caller
// checks each tensor's dtype and shape against what it needs first, so that a file of the
// wrong shape is refused at once, however large. Then read() reads the tensors it asks for and
// hashes the whole file in the same pass (the hash is of exactly the bytes used).
//
//   TensorFile f("q.npy");                          // reads the header only
//   const TensorInfo& q = f.select({});             // the one tensor (or a named one)
//   check(q.type, q.shape);                         // the caller's own rule
//   TensorFile::Contents c = f.read({&q});          // c.tensors[0], c.sha256
class TensorFile {
 public:
  // Throws FileReadError (cannot open), NpyFormatError / TraceFormatError (damaged header),
  // TensorFileError (neither format).
  explicit TensorFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return file_.path(); }
  bool is_npy() const { return is_npy_; }
  // A .npy's one array is named "".
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  // `name` selects a tensor of a .safetensors file; empty: the file's only tensor (a .npy's
  // array; a name given for a .npy is an error). TensorFileError names what the file holds.
  const TensorInfo& select(std::string_view name) const;
  // TensorFileError unless the tensor is F32 / F16 / BF16 (.npy: F32 / F16).
  DType kernel_dtype(const TensorInfo& tensor) const;

  struct Contents {
    std::vector<HostTensor> tensors;  // in the order asked
    std::string sha256;               // of the whole file
  };
  // Reads `wanted` (tensors of this file, F32 / F16 / BF16). Throws FileReadError when the file
  // changed since it was opened or while it was read.
  Contents read(std::span<const TensorInfo* const> wanted) const;

 private:
  InputFile file_;
  bool is_npy_ = false;
  std::vector<std::byte> header_;  // the bytes before the data (hashed first)
  std::vector<TensorInfo> tensors_;
};

// `name` selects the tensor of a .safetensors file; empty: the file's only tensor. Ignored
// (must be empty) for .npy. The same as TensorFile(path), select(name), read().
HostTensor load_tensor_file(const std::filesystem::path& path, std::string_view name = {});

// SHA-256 of bytes given in pieces (OpenSSL's EVP interface); hex(): 64 lowercase hex digits,
// once, at the end.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::string hex();

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

// SHA-256 of a file's bytes / of bytes, as 64 lowercase hex digits.
std::string sha256_file(const std::filesystem::path& path);
std::string sha256_hex(std::span<const std::byte> bytes);
// The same, reporting the bytes hashed after each few MiB (a GiB takes about half a second).
std::string sha256_hex(std::span<const std::byte> bytes, const std::function<void(size_t bytes)>& progress);

}  // namespace ts
