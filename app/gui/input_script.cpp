#include "app/gui/input_script.h"

#include <cstdint>
#include <sstream>

#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/file_error.h"

namespace ts {

bool is_script_key(std::string_view key) {
  for (const char* k : {"left", "right", "up", "down", "f", "pageup", "pagedown", "home", "end", "n", "shift+n", "d",
                        "shift+d", "lbracket", "rbracket", "space", "ctrl+e", "ctrl+o", "ctrl+s", "ctrl+h"})
    if (key == k) return true;
  return false;
}

std::vector<InputEvent> parse_input_script(std::string_view text) {
  std::vector<InputEvent> events;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    InputEvent e;
    std::string kind;
    if (!(words >> e.frame)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
      throw InputScriptError("input script line " + std::to_string(number) + ": expected a frame number: '" + line + "'");
    }
    auto fail = [&](const std::string& what) {
      return InputScriptError("input script line " + std::to_string(number) + ": " + what + ": '" + line + "'");
    };
    if (e.frame < 0) throw fail("negative frame");
    if (!(words >> kind)) throw fail("expected move, down, up, wheel or key");
    if (kind == "move") {
      e.kind = InputEvent::Kind::move;
      if (!(words >> e.x >> e.y)) throw fail("move wants x y");
    } else if (kind == "down" || kind == "up") {
      e.kind = kind == "down" ? InputEvent::Kind::down : InputEvent::Kind::up;
      std::string b;
      words >> b;
      if (b == "left") e.button = 0;
      else if (b == "right") e.button = 1;
      else if (b == "middle") e.button = 2;
      else throw fail("button must be left, right or middle");
    } else if (kind == "wheel") {
      e.kind = InputEvent::Kind::wheel;
      if (!(words >> e.steps)) throw fail("wheel wants a number of steps");
    } else if (kind == "key") {
      e.kind = InputEvent::Kind::key;
      words >> e.key;
      if (!is_script_key(e.key))
        throw fail("key must be one of left, right, up, down, f, pageup, pagedown, home, end, n, shift+n, d, shift+d, "
                   "lbracket, rbracket, space, ctrl+e, ctrl+o, ctrl+s, ctrl+h");
    } else {
      throw fail("unknown event '" + kind + "'");
    }
    std::string extra;
    if (words >> extra) throw fail("unexpected '" + extra + "'");
    events.push_back(e);
  }
  return events;
}

std::vector<InputEvent> load_input_script(const std::filesystem::path& path) {
  // A regular file of at most 16 MiB (file_bytes.h): a FIFO or /dev/zero is refused.
  std::string text;
  try {
    text = read_small_file(path, uint64_t{16} << 20);
  } catch (const FileReadError& e) {
    throw InputScriptError(std::string("cannot use the input script: ") + e.what());
  }
  return parse_input_script(text);
}

}  // namespace ts
