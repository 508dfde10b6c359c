#include "app/gui/error_log.h"

#include <cstdio>

namespace ts {

void ErrorLog::report(std::string_view where, std::string_view message) {
  std::fprintf(stderr, "tilescope-gui: %.*s: %.*s\n", static_cast<int>(where.size()), where.data(),
               static_cast<int>(message.size()), message.data());
  for (ErrorEntry& e : entries_)
    if (e.where == where && e.message == message) {
      ++e.repeats;
      return;
    }
  entries_.push_back({std::string(where), std::string(message), 1});
}

void ErrorLog::dismiss(size_t index) {
  if (index < entries_.size()) entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
}

}  // namespace ts
