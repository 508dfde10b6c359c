// tilescope: the command-line side of the debugger (capture, info, faults, diff, export).
// Every subcommand lives in its own cmd_*.cpp; this file wires them and turns
// errors into messages and exit codes (commands.h).
#include <csignal>
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "app/cli_common/cli_errors.h"
#include "app/cli/commands.h"
#include "app/cli_common/integer_options.h"
#include "app/model/capture/tool_version.h"

namespace {

// "tilescope capture" while a subcommand runs (for error messages), else "tilescope".
std::string command_prefix(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return "tilescope " + sub->get_name();
  return "tilescope";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ts::cli;
  // A closed pipe on stdout is a write error like any other (exit 3 with a message, below),
  // not a silent death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "tilescope: shows, tile by tile, what a tiled attention kernel computed and where it "
      "departs from a float64 reference.",
      "tilescope"};
  app.set_version_flag("--version", ts::tool_version());
  app.require_subcommand(0, 1);  // none: the help and exit 2, below
  app.footer("Exit codes: 0 ok, 1 divergence found (diff, export), 2 bad usage or input, 3 failure to "
             "run, 130 cancelled.\nRun `tilescope COMMAND --help` for a command's options.");
  add_capture_command(app);
  add_info_command(app);
  add_faults_command(app);
  add_diff_command(app);
  add_export_command(app);
  check_integer_options(app);

  int code = kExitOk;
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      std::cerr << app.help() << "\ntilescope: give a command (capture, info, faults, ...)\n";
      code = kExitBadInput;
    }
  } catch (const CLI::ParseError& e) {
    // --help / --version are "errors" with code 0; every real parse error is bad usage.
    code = app.exit(e) == 0 ? kExitOk : kExitBadInput;
  } catch (const CommandExit& e) {
    code = e.code;
  } catch (const std::exception& e) {
    code = report_error(command_prefix(app), e);
  }
  return finish_stdout(command_prefix(app), code);
}
