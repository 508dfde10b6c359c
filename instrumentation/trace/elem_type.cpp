#include "instrumentation/trace/elem_type.h"

#include <array>

namespace ts {

namespace {

struct ElemTypeInfo {
  ElemType type;
  std::string_view name;
  size_t size;
};

constexpr std::array<ElemTypeInfo, 13> kElemTypes = {{
    {ElemType::BOOL, "BOOL", 1},
    {ElemType::U8, "U8", 1},
    {ElemType::I8, "I8", 1},
    {ElemType::I16, "I16", 2},
    {ElemType::U16, "U16", 2},
    {ElemType::I32, "I32", 4},
    {ElemType::U32, "U32", 4},
    {ElemType::I64, "I64", 8},
    {ElemType::U64, "U64", 8},
    {ElemType::F16, "F16", 2},
    {ElemType::BF16, "BF16", 2},
    {ElemType::F32, "F32", 4},
    {ElemType::F64, "F64", 8},
}};

const ElemTypeInfo& info(ElemType type) {
  for (const auto& i : kElemTypes)
    if (i.type == type) return i;
  return kElemTypes[0];  // unreachable for a valid enum value
}

}  // namespace

std::string_view to_string(ElemType type) { return info(type).name; }
size_t elem_size(ElemType type) { return info(type).size; }

std::optional<ElemType> elem_type_from_name(std::string_view name) {
  for (const auto& i : kElemTypes)
    if (i.name == name) return i.type;
  return std::nullopt;
}

}  // namespace ts
