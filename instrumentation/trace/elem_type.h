// Element types of the tensors the file layer stores: the safetensors dtypes we read and
// write, of which .npy supports all but BF16. Names are safetensors' ("F32", "BF16", ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ts {

enum class ElemType : int32_t { BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64 };

std::string_view to_string(ElemType type);                    // "F32"
std::optional<ElemType> elem_type_from_name(std::string_view name);  // "F32" -> F32
size_t elem_size(ElemType type);                              // bytes per element: 1, 2, 4, 8

// The ElemType of a C++ element type, for typed views (F16 and BF16 have no C++ type here:
// read their bytes; BOOL neither: a byte other than 0 or 1 is not a valid C++ bool).
template <typename T> inline constexpr std::optional<ElemType> elem_type_of = std::nullopt;
template <> inline constexpr std::optional<ElemType> elem_type_of<uint8_t> = ElemType::U8;
template <> inline constexpr std::optional<ElemType> elem_type_of<int8_t> = ElemType::I8;
template <> inline constexpr std::optional<ElemType> elem_type_of<int16_t> = ElemType::I16;
template <> inline constexpr std::optional<ElemType> elem_type_of<uint16_t> = ElemType::U16;
template <> inline constexpr std::optional<ElemType> elem_type_of<int32_t> = ElemType::I32;
template <> inline constexpr std::optional<ElemType> elem_type_of<uint32_t> = ElemType::U32;
template <> inline constexpr std::optional<ElemType> elem_type_of<int64_t> = ElemType::I64;
template <> inline constexpr std::optional<ElemType> elem_type_of<uint64_t> = ElemType::U64;
template <> inline constexpr std::optional<ElemType> elem_type_of<float> = ElemType::F32;
template <> inline constexpr std::optional<ElemType> elem_type_of<double> = ElemType::F64;

}  // namespace ts
