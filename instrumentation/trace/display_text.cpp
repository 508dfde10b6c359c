#include "instrumentation/trace/display_text.h"

#include <cstdint>
#include <cstdio>

namespace ts {

namespace {

// The length of the valid UTF-8 sequence at text[i] and its code point, or 0 when the bytes
// there are not one (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
size_t utf8_sequence(std::string_view text, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  size_t length = 0;
  uint32_t cp = 0, min = 0;
  if (b0 < 0x80) {
    code_point = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    length = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  code_point = cp;
  return length;
}

// Code points shown escaped: controls, and those that reorder the text around them.
bool hidden(uint32_t cp, LineBreaks line_breaks) {
  if (cp == '\n') return line_breaks == LineBreaks::escape;
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void append_escaped(std::string& out, uint32_t cp) {
  char text[16];
  switch (cp) {
    case '\n': out += "\\n"; return;
    case '\t': out += "\\t"; return;
    case '\r': out += "\\r"; return;
    default: break;
  }
  if (cp < 0x80) std::snprintf(text, sizeof text, "\\x%02x", static_cast<unsigned>(cp));
  else std::snprintf(text, sizeof text, "\\u{%04x}", static_cast<unsigned>(cp));
  out += text;
}

}  // namespace

std::string printable(std::string_view text, LineBreaks line_breaks) {
  if (is_printable(text, line_breaks)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = utf8_sequence(text, i, cp);
    if (n == 0) {  // not UTF-8: the byte itself
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(static_cast<uint8_t>(text[i])));
      out += hex;
      ++i;
      continue;
    }
    if (hidden(cp, line_breaks)) append_escaped(out, cp);
    else out.append(text, i, n);
    i += n;
  }
  return out;
}

bool is_printable(std::string_view text, LineBreaks line_breaks) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = utf8_sequence(text, i, cp);
    if (n == 0 || hidden(cp, line_breaks)) return false;
    i += n;
  }
  return true;
}

}  // namespace ts
