// --inject-error [PANEL:]MESSAGE: the viewer's error paths exercised on purpose. Each panel asks
// at the worst place of its drawing (inside a table or popup, with IDs, styles and fonts pushed)
// whether an error is aimed at it, and throws it there once; the viewer must show it in the
// error panel and carry on. The GUI tests aim one at every panel on a real trace.
//
// PANEL is one of kInjectionPanels; a MESSAGE without a known "PANEL:" prefix goes to the main
// view (detail, or synthetic with --synthetic). No GL.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

inline constexpr std::array<std::string_view, 16> kInjectionPanels = {
    "viewer", "menu",   "header",        "overview",    "detail",     "stepping", "ab",        "launch",
    "status", "welcome", "open-dialog", "export-dialog", "save-dialog", "help",    "synthetic", "timeline"};

class ErrorInjection {
 public:
  // `default_panel` takes the messages that name no panel.
  void set(const std::vector<std::string>& specs, std::string_view default_panel);
  // Throws std::runtime_error(MESSAGE) for the first error aimed at `panel` (then forgets it).
  void throw_if_aimed_at(std::string_view panel);
  bool empty() const { return pending_.empty(); }

 private:
  struct Pending {
    std::string panel, message;
  };
  std::vector<Pending> pending_;
};

// The viewer's one injection list (set from the options at start; the panels consult it).
ErrorInjection& error_injection();

}  // namespace ts
