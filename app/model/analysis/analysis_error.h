// A run that cannot be analysed as given: events of a (batch, head) whose inputs the trace does
// not hold (the reference cannot be recomputed), inputs that do not fit the run's config, two
// runs that are not the same problem. The message names the problem and what to do; the CLI
// turns it into exit code 2, the GUI into an error panel.
#pragma once

#include <stdexcept>

namespace ts {

class AnalysisError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ts
