// Half-open index ranges as typed on the command line: "A:B" is [A, B), "A:" is [A, end),
// ":B" is [0, B), "A" is [A, A+1).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

namespace ts::cli {

// Throws CaptureError naming `option` and the text when it is not such a range, or when
// A < 0, B <= A or B > 2^31 - 1. The open end is INT32_MAX (as in TraceFilter).
std::pair<int32_t, int32_t> parse_index_range(std::string_view text, std::string_view option);

}  // namespace ts::cli
