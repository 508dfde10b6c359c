// Scripted input for headless runs (--input-script FILE): mouse moves, button presses, wheel
// steps and key presses on given frames, fed to Dear ImGui in place of the real devices. The
// GUI tests use it to drive the interactions (pick, arrow keys, zoom, pan) end to end.
//
// One event per line, '#' starts a comment; coordinates in window (ImGui screen) units:
//   <frame> move <x> <y>
//   <frame> down <left|right|middle>
//   <frame> up <left|right|middle>
//   <frame> wheel <steps>              (positive: away from the user, zooms in)
//   <frame> key <name>                 (pressed on that frame, released on the next: leave a
//                                      frame between two presses of one key). Names: left, right,
//                                      up, down, f, pageup, pagedown, home, end, n, shift+n
//                                      (N with Shift held), d, shift+d, lbracket ([), rbracket (]), space,
//                                      ctrl+e (the export dialog), ctrl+o (the open dialog),
//                                      ctrl+s (save trace as), ctrl+h (keys and mouse)
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

// A script that cannot be read or parsed: bad input (exit 2, as every bad input).
class InputScriptError : public std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct InputEvent {
  enum class Kind { move, down, up, wheel, key };
  int frame = 0;
  Kind kind = Kind::move;
  float x = 0, y = 0;   // move
  int button = 0;       // down, up: 0 left, 1 right, 2 middle
  float steps = 0;      // wheel
  std::string key;      // key: see the names above
};

// Whether `key` is a key name scripts may use.
bool is_script_key(std::string_view key);

// Throws InputScriptError naming the line and what is wrong with it.
std::vector<InputEvent> parse_input_script(std::string_view text);
std::vector<InputEvent> load_input_script(const std::filesystem::path& path);

}  // namespace ts
