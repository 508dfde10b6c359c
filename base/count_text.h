// "1 kv tile", "3 kv tiles": a count and its noun, for the messages every layer writes (the
// fault reasons here, the analysis's notes, the CLI's summaries). Regular plurals only.
#pragma once

#include <cstdint>
#include <string>

namespace ts {

inline std::string count_of(int64_t n, const std::string& thing) {
  return std::to_string(n) + " " + thing + (n == 1 ? "" : "s");
}

}  // namespace ts
