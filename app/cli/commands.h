// The `tilescope` program's subcommands. main.cpp builds the CLI::App and calls each add_*;
// each registers its subcommand, options and a callback that does the work.
//
// Exit codes: cli_errors.h.
//
// A callback reports through exceptions: library errors propagate to main, which prints the
// message (naming the subcommand) and maps the exception to its exit code (cli_errors.h); a
// callback that has already said what it has to say throws CommandExit{code}.
#pragma once

#include "app/cli_common/cli_errors.h"

namespace CLI {
class App;
}

namespace ts::cli {

// Thrown by a subcommand's callback to end the program with `code` (nothing more is printed).
struct CommandExit {
  int code = kExitOk;
};

void add_capture_command(CLI::App& app);  // cmd_capture.cpp
void add_info_command(CLI::App& app);     // cmd_info.cpp
void add_faults_command(CLI::App& app);   // cmd_faults.cpp
void add_diff_command(CLI::App& app);     // cmd_diff.cpp
void add_export_command(CLI::App& app);   // cmd_export.cpp

}  // namespace ts::cli
