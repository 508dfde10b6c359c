// The `tilescope` program's subcommands. main.cpp builds the CLI::App and calls each add_*;
// each registers its subcommand, options and a callback that does the work.
//
// Exit codes (every subcommand): 0 ok; 1 a divergence was found (diff); 2 bad usage or bad
// input (invalid config, unreadable or hostile file, inputs with NaN/Inf, unwritable output);
// 3 a failure to run (no GPU, launch failure, out of memory); 130 cancelled (Ctrl-C).
//
// A callback reports through exceptions: library errors propagate to main, which prints the
// message (naming the subcommand) and maps the exception to its exit code (cli_errors.h); a
// callback that has already said what it has to say throws CommandExit{code}.
#pragma once

namespace CLI {
class App;
}

namespace ts::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDivergence = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitRunFailure = 3;
inline constexpr int kExitCancelled = 130;

// Thrown by a subcommand's callback to end the program with `code` (nothing more is printed).
struct CommandExit {
  int code = kExitOk;
};

void add_capture_command(CLI::App& app);  // cmd_capture.cpp
void add_info_command(CLI::App& app);     // cmd_info.cpp
void add_faults_command(CLI::App& app);   // cmd_faults.cpp
void add_diff_command(CLI::App& app);     // cmd_diff.cpp   (registered when the file exists)
void add_export_command(CLI::App& app);   // cmd_export.cpp (registered when the file exists)

}  // namespace ts::cli
