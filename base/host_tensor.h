// A dense, row-major tensor in host memory, in one of the kernels' input dtypes. Used for
// the kernels' inputs (Q, K, V as [batch, heads, seq, head_dim]) and outputs, for tensors read
// from .npy / .safetensors files, and for tensors stored in traces. Host-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace ts {

struct HostTensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;  // numel() * dtype_size(dtype) bytes, little-endian

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t element_size() const { return dtype_size(dtype); }

  static HostTensor zeros(DType dtype, std::vector<int64_t> shape) {
    HostTensor t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.bytes.assign(static_cast<size_t>(t.numel()) * t.element_size(), std::byte{0});
    return t;
  }

  template <typename T>
  T* data_as() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(bytes.data());
  }

  // Element i converted to float (exact for fp16 / bf16).
  float get_float(int64_t i) const;
  // Element i as the tensor's dtype would store x (rounded to nearest even).
  void set_float(int64_t i, float x);
  // Elements [first, first + count) converted to float / double (exact), switching on the
  // dtype once rather than per element.
  void copy_floats(int64_t first, int64_t count, float* out) const;
  void copy_doubles(int64_t first, int64_t count, double* out) const;
  // The whole tensor converted to float / double.
  std::vector<float> to_float() const;
  std::vector<double> to_double() const;
};

// "[2, 8, 128, 64]"
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace ts
