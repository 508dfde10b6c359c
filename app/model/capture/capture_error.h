// A capture request that cannot be run as given (a trace filter that keeps nothing, an option
// that does not apply to the backend, bad input files...). The message names the problem in
// words of neither front end; field(), where the problem is one field's, says which, so that
// the CLI can name its option and the GUI mark its label. The CLI turns it into exit code 2,
// the GUI into an error panel or a marked field.
// (Invalid configs are ts::ConfigError, bad tensors ts::InputError, files ts::FileError.)
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "app/model/capture/capture_field.h"

namespace ts {

class CaptureError : public std::runtime_error {
 public:
  explicit CaptureError(const std::string& message) : std::runtime_error(message) {}
  CaptureError(CaptureField field, const std::string& message) : std::runtime_error(message), field_(field) {}
  std::optional<CaptureField> field() const { return field_; }

 private:
  std::optional<CaptureField> field_;
};

}  // namespace ts
