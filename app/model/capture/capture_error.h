// A capture request that cannot be run as given (bad input file count, a trace filter that
// keeps nothing, an option that does not apply to the backend...). The message names the
// problem and what to do. The CLI turns it into exit code 2, the GUI into an error panel.
// (Invalid configs are ts::ConfigError, bad tensors ts::InputError, files ts::FileError.)
#pragma once

#include <stdexcept>
#include <string>

namespace ts {

class CaptureError : public std::runtime_error {
 public:
  explicit CaptureError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ts
