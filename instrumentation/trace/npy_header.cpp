#include "instrumentation/trace/npy_header.h"

#include <set>

#include "instrumentation/trace/file_error.h"

namespace ts {

namespace {

// Recursive descent over one dict of strings, booleans and a tuple of integers. Nothing
// nests deeper than the tuple, so no input can recurse.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& file_name) : s_(text), file_(file_name) {}

  NpyHeaderDict parse() {
    NpyHeaderDict out;
    std::set<std::string> seen;
    expect('{');
    skip_space();
    while (peek() != '}') {
      const std::string key = string_literal();
      if (!seen.insert(key).second) fail("key '" + key + "' appears twice");
      expect(':');
      if (key == "descr") {
        skip_space();
        if (peek() != '\'' && peek() != '"')
          fail("'descr' is not a simple dtype string (structured dtypes are not supported)");
        out.descr = string_literal();
      } else if (key == "fortran_order") {
        out.fortran_order = boolean();
      } else if (key == "shape") {
        out.shape = tuple();
      } else {
        fail("unexpected key '" + key + "' (expected descr, fortran_order, shape)");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
      } else if (peek() != '}') {
        fail("expected ',' or '}' at offset " + std::to_string(pos_));
      }
    }
    ++pos_;
    while (pos_ < s_.size()) {
      if (s_[pos_] != ' ' && s_[pos_] != '\n' && s_[pos_] != '\t' && s_[pos_] != '\r' &&
          s_[pos_] != '\0')
        fail("unexpected text after the header dictionary");
      ++pos_;
    }
    for (const char* k : {"descr", "fortran_order", "shape"})
      if (seen.count(k) == 0) fail(std::string("header lacks '") + k + "'");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw NpyFormatError(file_, file_ + ": invalid .npy header: " + what);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\x01'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c)
      fail(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string at offset " + std::to_string(pos_));
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    if (out.find('\\') != std::string::npos) fail("escapes in strings are not supported");
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("'fortran_order' is not True or False");
  }
  std::vector<uint64_t> tuple() {
    std::vector<uint64_t> dims;
    expect('(');
    skip_space();
    while (peek() != ')') {
      if (peek() < '0' || peek() > '9') fail("'shape' must be a tuple of non-negative integers");
      uint64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(d, 10u, &d) ||
            __builtin_add_overflow(d, static_cast<uint64_t>(peek() - '0'), &d))
          fail("a dimension in 'shape' is too large");
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs
      if (dims.size() >= 64) fail("'shape' has more than 64 dimensions");
      dims.push_back(d);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;
    return dims;
  }

  std::string_view s_;
  const std::string& file_;
  size_t pos_ = 0;
};

}  // namespace

NpyHeaderDict parse_npy_header_dict(std::string_view text, const std::string& file_name) {
  return DictParser(text, file_name).parse();
}

}  // namespace ts
