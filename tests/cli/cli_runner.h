// Runs the real `tilescope` binary (the one this build tree made; see tilescope_exe) with
// arguments, its stdout and stderr captured through files, and reports its exit code.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace ts::test {

struct CliRun {
  int exit_code = -1;  // 128 + signal when the process was killed by a signal
  std::string out, err;
};

// The binary: $TILESCOPE_EXE, else <build>/app/cli/tilescope beside this test's build folder,
// else the path CMake compiled in.
std::string tilescope_exe();

// Runs `tilescope args...` to completion; its output files go to `scratch`.
CliRun run_tilescope(const std::vector<std::string>& args, const std::filesystem::path& scratch);

// Starts `tilescope args...` without waiting; stdout/stderr go to the given files. SIGINT,
// SIGTERM and SIGHUP start with their default action, as in a terminal's foreground job (not as
// this test happens to have them), except those in `ignored`, which start ignored (as under
// nohup, or in a script's background job).
pid_t spawn_tilescope(const std::vector<std::string>& args, const std::filesystem::path& out,
                      const std::filesystem::path& err, const std::vector<int>& ignored = {});
// Waits for a spawned process; the exit code as in CliRun.
int wait_exit_code(pid_t pid);

std::string read_text(const std::filesystem::path& path);

}  // namespace ts::test
