#include "app/gui/error_injection.h"

#include <algorithm>
#include <stdexcept>

namespace ts {

void ErrorInjection::set(const std::vector<std::string>& specs, std::string_view default_panel) {
  pending_.clear();
  for (const std::string& spec : specs) {
    const size_t colon = spec.find(':');
    const std::string_view prefix = colon == std::string::npos ? std::string_view() : std::string_view(spec).substr(0, colon);
    const bool named = colon != std::string::npos &&
                       std::find(kInjectionPanels.begin(), kInjectionPanels.end(), prefix) != kInjectionPanels.end();
    if (named) pending_.push_back({std::string(prefix), spec.substr(colon + 1)});
    else pending_.push_back({std::string(default_panel), spec});
  }
}

void ErrorInjection::throw_if_aimed_at(std::string_view panel) {
  const auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.panel == panel; });
  if (it == pending_.end()) return;
  const std::string message = it->message;
  pending_.erase(it);
  throw std::runtime_error(message);
}

ErrorInjection& error_injection() {
  static ErrorInjection injection;
  return injection;
}

}  // namespace ts
