// Whole-number options checked for what they are. CLI11 (2.1) reads integers with strtoull /
// strtoll in base 0 and does not check their range: "--seed -1" becomes 2^64 - 1, a seed past
// 2^64 silently becomes 2^64 - 1, and "--seq-q 010" is 8 (octal). check_integer_options walks
// every option of an app (and its subcommands) that CLI11 will read into an integer and puts a
// check in front of its conversion: decimal digits only (a leading '-' for signed types), within
// 64 bits, rewritten in canonical form; CLI11's own conversion then catches narrower types.
// Anything else is a usage error naming the option and the text (exit 2).
//
//   CLI::App app;  ...declare options...;  check_integer_options(app);  app.parse(argc, argv);
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace ts::cli {

// Call after every option has been declared (options added later are not checked).
void check_integer_options(CLI::App& app);

// The checks themselves: the canonical text of `text` as a signed / unsigned 64-bit decimal,
// or nullopt.
std::optional<std::string> canonical_signed(std::string_view text);
std::optional<std::string> canonical_unsigned(std::string_view text);

}  // namespace ts::cli
