// Lists of indices as a person reads them: "0-15, 17, 20-22".
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace ts {

// `indices` sorted ascending; at most `max_runs` runs are written, then ", ..." .
std::string format_ranges(std::span<const int64_t> indices, size_t max_runs = 8);
std::string format_ranges(std::span<const int32_t> indices, size_t max_runs = 8);

// "1.23e-05" style, 3 significant digits (for reports).
std::string format_figure(double value);

}  // namespace ts
