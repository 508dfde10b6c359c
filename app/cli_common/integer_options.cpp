#include "app/cli_common/integer_options.h"

#include <charconv>
#include <cstdint>
#include <limits>

#include <CLI/CLI.hpp>

namespace ts::cli {

namespace {

template <typename T>
std::optional<std::string> canonical(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return std::to_string(value);
}

CLI::Validator integer_check(bool is_signed) {
  // No description: the help keeps showing INT / UINT.
  return CLI::Validator(
      [is_signed](std::string& text) -> std::string {
        const std::optional<std::string> c = is_signed ? canonical_signed(text) : canonical_unsigned(text);
        if (c) {
          text = *c;
          return {};
        }
        // What is wrong with it, and no range beyond the type's: the option's own check says
        // its range (--workers 0 to 1024), and "from 0 to 18446744073709551615" read as if it
        // were that range.
        const std::string_view digits = std::string_view(text).substr(!text.empty() && text[0] == '-' ? 1 : 0);
        const bool decimal = !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
        if (!decimal) return "'" + text + "' is not a whole number (decimal digits only)";
        if (!is_signed && text[0] == '-') return "'" + text + "' is negative (give a whole number >= 0)";
        if (is_signed)
          return "'" + text + "' is outside " + std::to_string(std::numeric_limits<int64_t>::min()) + " .. " +
                 std::to_string(std::numeric_limits<int64_t>::max());
        return "'" + text + "' is too large (beyond " + std::to_string(std::numeric_limits<uint64_t>::max()) + ")";
      },
      "");
}

}  // namespace

std::optional<std::string> canonical_signed(std::string_view text) { return canonical<int64_t>(text); }
std::optional<std::string> canonical_unsigned(std::string_view text) { return canonical<uint64_t>(text); }

void check_integer_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const auto starts = [&](std::string_view prefix) {
      return type.rfind(prefix, 0) == 0 && (type.size() == prefix.size() || type[prefix.size()] == ':');
    };
    if (starts("UINT")) option->transform(integer_check(false));
    else if (starts("INT")) option->transform(integer_check(true));
  }
  for (CLI::App* sub : app.get_subcommands({})) check_integer_options(*sub);
}

}  // namespace ts::cli
