// tilescope-gui: the viewer. See viewer_app.h for the loop and gui_options.h for the command
// line (tilescope-gui --help). Exit codes as the CLI's (app/cli_common/cli_errors.h).
#include <csignal>
#include <cstdio>

#include "app/cli_common/cli_errors.h"
#include "app/gui/gui_options.h"
#include "app/gui/viewer_app.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout is a write error (exit 3), as in the CLI
  const ts::GuiOptionsResult parsed = ts::parse_gui_options(argc, argv);
  if (!parsed.options) {
    std::fprintf(parsed.exit_code ? stderr : stdout, "%s\n", parsed.output.c_str());
    return ts::cli::finish_stdout("tilescope-gui", parsed.exit_code);
  }
  int code = ts::cli::kExitOk;
  try {
    code = ts::run_viewer(*parsed.options);
  } catch (const std::exception& e) {
    code = ts::cli::report_error("tilescope-gui", e);
  }
  return ts::cli::finish_stdout("tilescope-gui", code);
}
