#include "app/cli_common/report_output.h"

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/display_text.h"

namespace ts::cli {

namespace {

int g_first_error = 0;  // errno of the first failed write to stdout

void print(const std::string& text) {
  errno = 0;
  std::cout << text << std::flush;
  if (g_first_error == 0 && (std::ferror(stdout) || !std::cout.good())) g_first_error = errno != 0 ? errno : EIO;
}

}  // namespace

void print_report(std::string_view text) { print(printable(text, LineBreaks::keep)); }

void print_json(const nlohmann::json& j) {
  print(j.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace) + "\n");
}

int first_stdout_error() { return g_first_error; }

}  // namespace ts::cli
