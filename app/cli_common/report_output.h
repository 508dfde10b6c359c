// How the commands print what they report on stdout: text made printable (display_text.h:
// reports quote file names and metadata, which may hold escape sequences), JSON with invalid
// UTF-8 replaced rather than thrown on. Whether stdout took it all is checked once, at exit
// (finish_stdout in cli_errors.h).
#pragma once

#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace ts::cli {

// `text` as printable(text, LineBreaks::keep): its lines kept, every other control escaped.
void print_report(std::string_view text);

// Indented by 2, ending with a newline; control characters escaped as JSON does, invalid UTF-8
// replaced by U+FFFD.
void print_json(const nlohmann::json& j);

// The errno of the first write to stdout through these that failed, or 0.
int first_stdout_error();

}  // namespace ts::cli
