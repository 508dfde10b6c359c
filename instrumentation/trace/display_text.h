// Text that came from a file (metadata, tensor names, paths, error messages that quote them),
// made safe to show: on a terminal an escape sequence in a trace's metadata would otherwise set
// the window title, clear the screen or rewrite earlier lines, and in the viewer or a PNG label
// invalid UTF-8 draws as garbage. Every place that prints or draws such text goes through
// printable(): the CLI's reports and error messages, the viewer's header and error panel, the
// labels of exported images. (JSON output is escaped by the JSON library instead.)
//
//   printable("a\x1b[2Jb") == "a\\x1b[2Jb"     (the ESC byte shown as the four characters \x1b)
#pragma once

#include <string>
#include <string_view>

namespace ts {

enum class LineBreaks {
  escape,  // "\n" becomes the two characters \n: one field stays on one line
  keep,    // "\n" is kept (messages of several lines); every other control is escaped
};

// Valid UTF-8 other than control characters is kept as it is. Escaped: C0 controls and DEL
// (\t \n \r by name, the rest as \xNN), C1 controls (U+0080..U+009F) and the bidirectional
// overrides and isolates that reorder what is shown (U+200E/F, U+202A..U+202E,
// U+2066..U+2069) as \u{NNNN}, and each byte of invalid UTF-8 (overlong forms, surrogates,
// values past U+10FFFF, truncated sequences) as \xNN.
std::string printable(std::string_view text, LineBreaks line_breaks = LineBreaks::escape);

// Whether printable(text, line_breaks) would return `text` unchanged.
bool is_printable(std::string_view text, LineBreaks line_breaks = LineBreaks::escape);

}  // namespace ts
