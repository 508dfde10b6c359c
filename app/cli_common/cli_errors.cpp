#include "app/cli_common/cli_errors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

#include "app/cli_common/capture_flags.h"
#include "app/cli_common/report_output.h"
#include "app/model/analysis/analysis_error.h"
#include "app/model/analysis/tolerance.h"
#include "app/model/capture/capture_check.h"
#include "app/model/capture/capture_error.h"
#include "instrumentation/trace/display_text.h"
#include "instrumentation/trace/file_error.h"
#include "base/attention_config.h"
#include "base/attention_inputs.h"
#include "kernels/launch_error.h"

namespace ts::cli {

int exit_code_for(const std::exception& e) {
  if (dynamic_cast<const WriteCancelled*>(&e)) return kExitCancelled;
  if (const auto* launch = dynamic_cast<const LaunchError*>(&e))
    return launch->cancelled() ? kExitCancelled : kExitRunFailure;
  if (dynamic_cast<const std::bad_alloc*>(&e)) return kExitRunFailure;
  if (dynamic_cast<const std::invalid_argument*>(&e) || dynamic_cast<const InputError*>(&e) ||
      dynamic_cast<const FileError*>(&e) || dynamic_cast<const CaptureError*>(&e) ||
      dynamic_cast<const AnalysisError*>(&e) || dynamic_cast<const ToleranceError*>(&e))
    return kExitBadInput;
  return kExitRunFailure;
}

int exit_code_for(const std::exception_ptr& e) {
  if (!e) return kExitOk;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return exit_code_for(x);
  } catch (...) {
  }
  return kExitRunFailure;
}

void print_error(std::string_view prefix, std::string_view message, LineBreaks line_breaks) {
  std::cerr << prefix << ": " << printable(message, line_breaks) << "\n" << std::flush;
}

LineBreaks message_line_breaks(const std::exception& e) {
  return dynamic_cast<const FileError*>(&e) ? LineBreaks::escape : LineBreaks::keep;
}

int report_error(std::string_view prefix, const std::exception& e) {
  std::string message = e.what();
  if (const auto* config = dynamic_cast<const ConfigError*>(&e)) {
    message = "invalid config: " + message;
    if (const std::optional<CaptureField> field = capture_field_of_config(config->field()))
      message += " (fix " + std::string(option_for(*field)) + ")";
  } else if (const auto* capture = dynamic_cast<const CaptureError*>(&e); capture && capture->field()) {
    message += " (fix " + std::string(option_for(*capture->field())) + ")";
  } else if (dynamic_cast<const WriteCancelled*>(&e)) {
    message = "cancelled; nothing was written";
  } else if (const auto* launch = dynamic_cast<const LaunchError*>(&e)) {
    switch (launch->reason()) {
      case LaunchFailure::cancelled: message = "cancelled; nothing was written"; break;
      case LaunchFailure::no_device:
      case LaunchFailure::not_built:
        if (message.find("--backend cpu") == std::string::npos)
          message += " (run with --backend cpu, or on a machine with a CUDA GPU)";
        break;
      default: break;
    }
  } else if (dynamic_cast<const std::bad_alloc*>(&e)) {
    message = "out of memory; reduce the sizes or narrow the trace filters";
  } else if (exit_code_for(e) == kExitRunFailure) {
    message = "internal error: " + message + " (please report it with the command line)";
  }
  print_error(prefix, message, message_line_breaks(e));
  return exit_code_for(e);
}

int finish_stdout(std::string_view prefix, int code) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return code;
  const int first = first_stdout_error();
  const std::string why = first != 0 ? std::strerror(first) : !flushed && err != 0 ? std::strerror(err) : "a write failed";
  print_error(prefix, "cannot write the report to standard output (" + why + "); it is incomplete or missing");
  return kExitRunFailure;
}

}  // namespace ts::cli
