// tilescope-gui: the viewer. See viewer_app.h for the loop and gui_options.h for the command
// line (tilescope-gui --help).
#include <cstdio>

#include "app/gui/gui_options.h"
#include "app/gui/viewer_app.h"

int main(int argc, char** argv) {
  const ts::GuiOptionsResult parsed = ts::parse_gui_options(argc, argv);
  if (!parsed.options) {
    std::fprintf(parsed.exit_code ? stderr : stdout, "%s\n", parsed.output.c_str());
    return parsed.exit_code;
  }
  try {
    return ts::run_viewer(*parsed.options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilescope-gui: %s\n", e.what());
    return 1;
  }
}
