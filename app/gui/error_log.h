// Errors the viewer shows in its window instead of crashing: a corrupt file, a failed launch,
// an export path that cannot be written. The error panel (error_panel.h) draws them; the app
// keeps running. No GL, no ImGui.
#pragma once

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "instrumentation/trace/display_text.h"

namespace ts {

struct ErrorEntry {
  std::string where;    // what was being done: "export PNG", "open trace"
  std::string message;  // the exception's message (printable: display_text.h): the problem and what to do
  int repeats = 1;      // the same error again is counted, not listed again
  int exit_code = 3;    // what the CLI would exit with for it (cli_errors.h): 2 bad input, 3 failure
};

class ErrorLog {
 public:
  // Adds an entry (and prints it to stderr, for logs of headless runs). The message is made
  // printable here, once for every error the viewer shows: messages quote file contents.
  void report(std::string_view where, std::string_view message, int exit_code = 3,
              LineBreaks line_breaks = LineBreaks::keep);
  // The same for an exception, with its exit code (exit_code_for) and its line breaks as the CLI
  // shows them (message_line_breaks: a file error's are the file's, escaped).
  void report(std::string_view where, const std::exception& e);
  void report(std::string_view where, const std::exception_ptr& e);
  void dismiss(size_t index);
  void clear() { entries_.clear(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<ErrorEntry>& entries() const { return entries_; }

 private:
  std::vector<ErrorEntry> entries_;
};

// Runs body(); an exception becomes an entry of `log` instead of escaping. Returns whether
// body() finished.
template <class Body>
bool guarded(ErrorLog& log, std::string_view where, Body&& body) {
  try {
    body();
    return true;
  } catch (const std::exception& e) {
    log.report(where, e);
  } catch (...) {
    log.report(where, "unknown error");
  }
  return false;
}

}  // namespace ts
