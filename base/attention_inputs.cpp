#include "base/attention_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ts {

InputError::InputError(std::string tensor, const std::string& message)
    : std::runtime_error(message), tensor_(std::move(tensor)) {}

namespace {

std::string index_string(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return shape_string(idx);
}

// Whether any of `count` elements has its exponent bits all set, without an early exit: a loop
// of constant length the compiler vectorises (a GiB of inputs in a few tens of ms).
template <typename Bits, int64_t Count>
bool any_non_finite(const std::byte* data, Bits exponent_mask) {
  Bits bad = 0;
  for (int64_t i = 0; i < Count; ++i) {
    Bits b;
    std::memcpy(&b, data + i * static_cast<int64_t>(sizeof(Bits)), sizeof(Bits));
    bad |= static_cast<Bits>((b & exponent_mask) == exponent_mask);
  }
  return bad != 0;
}

// Blocks are scanned as above, and only a block holding a bad element is searched.
template <typename Bits>
int64_t first_non_finite_bits(const std::byte* data, int64_t n, Bits exponent_mask) {
  constexpr int64_t kBlock = 4096;
  int64_t begin = 0;
  for (; begin + kBlock <= n; begin += kBlock)
    if (any_non_finite<Bits, kBlock>(data + begin * static_cast<int64_t>(sizeof(Bits)), exponent_mask)) break;
  for (int64_t i = begin; i < n; ++i) {
    Bits b;
    std::memcpy(&b, data + i * static_cast<int64_t>(sizeof(Bits)), sizeof(Bits));
    if ((b & exponent_mask) == exponent_mask) return i;
  }
  return -1;
}

int64_t first_non_finite(const HostTensor& t) {
  switch (t.dtype) {
    case DType::f32: return first_non_finite_bits<uint32_t>(t.bytes.data(), t.numel(), 0x7f800000u);
    case DType::f16: return first_non_finite_bits<uint16_t>(t.bytes.data(), t.numel(), 0x7c00u);
    case DType::bf16: return first_non_finite_bits<uint16_t>(t.bytes.data(), t.numel(), 0x7f80u);
  }
  return -1;
}

std::vector<int64_t> needed_shape(const AttentionConfig& c, const std::string& tensor) {
  if (tensor == "q") return {c.batch, c.heads, c.seq_q, c.head_dim};
  return {c.batch, c.kv_heads(), c.seq_kv, c.head_dim};
}

void check_layout(const std::string& name, const std::vector<int64_t>& got_shape, DType got_dtype,
                  const std::vector<int64_t>& shape, DType dtype) {
  if (got_shape != shape)
    throw InputError(name, "input " + name + " has shape " + shape_string(got_shape) +
                               " but the config needs " + shape_string(shape) +
                               (name == "q" ? " ([batch, heads, seq_q, head_dim])"
                                            : " ([batch, heads_kv, seq_kv, head_dim])"));
  if (got_dtype != dtype)
    throw InputError(name, "input " + name + " is " + std::string(to_string(got_dtype)) +
                               " but the config's dtype is " + std::string(to_string(dtype)));
}

void check_one(const char* name, const HostTensor& t, const std::vector<int64_t>& shape,
               DType dtype) {
  check_layout(name, t.shape, t.dtype, shape, dtype);
  if (t.bytes.size() != static_cast<size_t>(t.numel()) * t.element_size())
    throw InputError(name, std::string("input ") + name + " holds " +
                               std::to_string(t.bytes.size()) + " bytes, not the " +
                               std::to_string(t.numel() * static_cast<int64_t>(t.element_size())) +
                               " its shape needs");
  // Scan the exponent bits (all ones: NaN or Inf) rather than converting every element.
  const int64_t bad = first_non_finite(t);
  if (bad >= 0) {
    const float x = t.get_float(bad);
    throw InputError(name, std::string("input ") + name + " holds " +
                               (std::isnan(x) ? "NaN" : "Inf") + " at index " +
                               index_string(t.shape, bad) +
                               "; the kernels need finite inputs (replace or mask it)");
  }
}

}  // namespace

void check_inputs(const AttentionConfig& c, const AttentionInputs& in) {
  check_one("q", in.q, needed_shape(c, "q"), c.dtype);
  check_one("k", in.k, needed_shape(c, "k"), c.dtype);
  check_one("v", in.v, needed_shape(c, "v"), c.dtype);
}

void check_input_layout(const AttentionConfig& c, const std::string& tensor,
                        const std::vector<int64_t>& shape, DType dtype) {
  check_layout(tensor, shape, dtype, needed_shape(c, tensor), c.dtype);
}

}  // namespace ts
