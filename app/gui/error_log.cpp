#include "app/gui/error_log.h"

#include <cstdio>
#include <string>

#include "app/cli_common/cli_errors.h"
#include "app/model/capture/capture_error.h"
#include "app/model/viewer/launch_form.h"
#include "instrumentation/trace/display_text.h"

namespace ts {

void ErrorLog::report(std::string_view where, std::string_view raw_message, int exit_code, LineBreaks line_breaks) {
  const std::string message = printable(raw_message, line_breaks);
  const std::string place = printable(where);
  std::fprintf(stderr, "tilescope-gui: %s: %s\n", place.c_str(), message.c_str());
  for (ErrorEntry& e : entries_)
    if (e.where == place && e.message == message) {
      ++e.repeats;
      return;
    }
  entries_.push_back({place, message, 1, exit_code});
}

void ErrorLog::report(std::string_view where, const std::exception& e) {
  // A capture request's problem names its field as the launch form labels it.
  if (const auto* capture = dynamic_cast<const CaptureError*>(&e); capture && capture->field())
    return report(where, problem_text({*capture->field(), capture->what()}), cli::exit_code_for(e));
  report(where, e.what(), cli::exit_code_for(e), cli::message_line_breaks(e));
}

void ErrorLog::report(std::string_view where, const std::exception_ptr& e) {
  try {
    if (e) std::rethrow_exception(e);
    report(where, "unknown error");
  } catch (const std::exception& x) {
    report(where, x);
  } catch (...) {
    report(where, "unknown error");
  }
}

void ErrorLog::dismiss(size_t index) {
  if (index < entries_.size()) entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
}

}  // namespace ts
