// The element types of attention inputs and outputs, their names and sizes. The one list of
// dtypes tilescope knows: trace files and the reference refer to it; which of them each kernel is
// built for is kernels/kernel_list.cmake's (base/kernel_list.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ts {

enum class DType : int32_t { f32 = 0, f16 = 1, bf16 = 2 };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16};

std::string_view to_string(DType dtype);                      // "fp32", "fp16", "bf16"
std::optional<DType> dtype_from_name(std::string_view name);  // the same names
size_t dtype_size(DType dtype);

}  // namespace ts
