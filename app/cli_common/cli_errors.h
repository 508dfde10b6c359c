// How the programs (tilescope and tilescope-gui) end: the exit code of every kind of error, one
// message on stderr naming the program, the command and the problem (made printable: messages
// quote file contents and names), and a check that the report on stdout was really written.
// Never a stack trace.
//
// Exit codes: 0 ok; 1 a divergence was found (diff, export); 2 bad usage or bad input (invalid
// config, unreadable or hostile file, inputs with NaN/Inf, an output path that may not be
// written); 3 a failure to run (no GPU, launch failure, out of memory, stdout not writable);
// 130 cancelled (Ctrl-C, SIGTERM, SIGHUP).
#pragma once

#include <exception>
#include <string_view>

#include "instrumentation/trace/display_text.h"

namespace ts::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDivergence = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitRunFailure = 3;
inline constexpr int kExitCancelled = 130;

// The exit code for an exception thrown by library code (ConfigError, InputError, FileError,
// CaptureError, AnalysisError: 2; WriteCancelled: 130; LaunchError: 3, or 130 when cancelled;
// anything else: 3).
int exit_code_for(const std::exception& e);
// The same for a captured exception (3 for one that is not a std::exception, 0 for none).
int exit_code_for(const std::exception_ptr& e);

// Prints "<prefix>: <message>" (prefix "tilescope capture", "tilescope-gui"; with a hint where
// the library's message lacks one) on stderr and returns exit_code_for(e).
int report_error(std::string_view prefix, const std::exception& e);

// Prints "<prefix>: <message>" on stderr, the message made printable (display_text.h).
void print_error(std::string_view prefix, std::string_view message, LineBreaks line_breaks = LineBreaks::keep);

// How the line breaks of e's message are shown. A file error's message is one line that quotes
// text from the file (a tensor name, a metadata value, a path): a line break there is the file's
// and is escaped, so that a file cannot add lines to what is printed ("verdict: clean"). Other
// messages may span lines on purpose.
LineBreaks message_line_breaks(const std::exception& e);

// Flushes stdout. When anything written to it failed (a full disk, /dev/full, a closed pipe),
// says so on stderr and returns kExitRunFailure; else returns `code`.
int finish_stdout(std::string_view prefix, int code);

}  // namespace ts::cli
