#include "app/model/capture/tool_version.h"

// Set by app/model/capture/CMakeLists.txt at configure time.
#ifndef TILESCOPE_VERSION
#error "TILESCOPE_VERSION must be defined by the build"
#endif
#ifndef TILESCOPE_GIT_DESCRIBE
#define TILESCOPE_GIT_DESCRIBE ""
#endif

namespace ts {

std::string tool_version() {
  std::string v = "tilescope " TILESCOPE_VERSION;
  const std::string git = TILESCOPE_GIT_DESCRIBE;
  if (!git.empty()) v += " (git " + git + ")";
  return v;
}

}  // namespace ts
