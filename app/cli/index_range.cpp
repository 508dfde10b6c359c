#include "app/cli/index_range.h"

#include <charconv>
#include <limits>
#include <string>

#include "app/model/capture/capture_error.h"

namespace ts::cli {
namespace {

bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

std::pair<int32_t, int32_t> parse_index_range(std::string_view text, std::string_view option) {
  const auto bad = [&](const std::string& why) {
    return CaptureError(std::string(option) + " '" + std::string(text) + "': " + why +
                        "; expected A:B (from A up to, not including, B), A:, :B or A");
  };
  constexpr int64_t kOpen = std::numeric_limits<int32_t>::max();
  int64_t begin = 0, end = kOpen;
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    if (!parse_int(text, begin)) throw bad("not an index");
    if (begin >= kOpen) throw bad("index too large");
    end = begin + 1;
  } else {
    const std::string_view a = text.substr(0, colon), b = text.substr(colon + 1);
    if (!a.empty() && !parse_int(a, begin)) throw bad("'" + std::string(a) + "' is not an index");
    if (!b.empty() && !parse_int(b, end)) throw bad("'" + std::string(b) + "' is not an index");
  }
  if (begin < 0) throw bad("indices start at 0");
  if (end <= begin) throw bad("the range is empty");
  if (end > kOpen) throw bad("index too large (at most 2^31 - 1)");
  return {static_cast<int32_t>(begin), static_cast<int32_t>(end)};
}

}  // namespace ts::cli
