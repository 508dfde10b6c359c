// "a, b and c", "32, 64, 128 or 256": a list in words, for the messages every layer writes
// (the kernel list's refusals, the CLI's help, the analysis's sentences), beside count_text.h's
// counts. The conjunction is the caller's: "and" for what holds together, "or" for a choice.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ts {

// Items joined by ", ", the last two by " <conjunction> "; one item alone, "" for none.
inline std::string spoken_list(std::span<const std::string> items, std::string_view conjunction) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " " + std::string(conjunction) + " " : std::string(", ");
    out += items[i];
  }
  return out;
}

}  // namespace ts
