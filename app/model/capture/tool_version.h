// The tool's version as recorded in traces and printed by `tilescope --version`: the project
// version, plus `git describe` of the source tree when it was configured (when git and the
// repository were available then).
#pragma once

#include <string>

namespace ts {

std::string tool_version();  // "tilescope 0.1.0 (git 1298a3e-dirty)" or "tilescope 0.1.0"

}  // namespace ts
