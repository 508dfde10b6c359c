#include "base/dtype.h"

#include <array>
#include <utility>

namespace ts {
namespace {

constexpr std::array<std::pair<std::string_view, DType>, 3> kDTypeNames{
    {{"fp32", DType::f32}, {"fp16", DType::f16}, {"bf16", DType::bf16}}};

}  // namespace

std::string_view to_string(DType dtype) {
  for (const auto& [name, d] : kDTypeNames)
    if (d == dtype) return name;
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& [n, d] : kDTypeNames)
    if (n == name) return d;
  return std::nullopt;
}

size_t dtype_size(DType dtype) { return dtype == DType::f32 ? 4 : 2; }

}  // namespace ts
