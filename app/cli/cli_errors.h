// How the CLI reports an exception: one message on stderr naming the subcommand, the problem
// and what to do, and the exit code of its kind (commands.h). Never a stack trace.
#pragma once

#include <exception>
#include <string_view>

namespace ts::cli {

// The exit code for an exception thrown by library code (ConfigError, InputError, FileError,
// CaptureError: 2; LaunchError: 3, or 130 when cancelled; anything else: 3).
int exit_code_for(const std::exception& e);

// Prints "tilescope <command>: <message>" (with a hint where the library's message lacks one)
// on stderr and returns exit_code_for(e).
int report_error(std::string_view command, const std::exception& e);

}  // namespace ts::cli
