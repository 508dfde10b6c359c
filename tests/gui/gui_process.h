// Runs the tilescope-gui binary for a test and captures its exit code and output. Without a
// display wanted, DISPLAY and WAYLAND_DISPLAY are removed from its environment. With one
// wanted and none set, the test program starts its own Xvfb once (VirtualDisplay) and points
// DISPLAY at it: sturdier than an `xvfb-run` per run, which now and then fails cleaning up.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ts::test {

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline bool display_available() {
  const char* d = std::getenv("DISPLAY");
  return d && *d;
}

// An Xvfb server for the lifetime of the test program, started when DISPLAY is unset.
class VirtualDisplay {
 public:
  static void ensure() {
    static VirtualDisplay instance;  // stopped at exit
  }

 private:
  VirtualDisplay() {
    if (display_available()) return;
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      const std::string fd = std::to_string(fds[1]);
      // -displayfd: Xvfb picks a free display number and writes it to the pipe when ready.
      ::execlp("Xvfb", "Xvfb", "-displayfd", fd.c_str(), "-screen", "0", "1920x1080x24", "-nolisten", "tcp",
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    std::string number;
    char c;
    while (pid_ > 0 && ::read(fds[0], &c, 1) == 1 && c != '\n') number += c;
    ::close(fds[0]);
    if (!number.empty()) ::setenv("DISPLAY", (":" + number).c_str(), 1);
  }
  ~VirtualDisplay() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid_ = -1;
};

inline ProcessResult run_gui(const std::vector<std::string>& args, bool with_display = true) {
  std::string cmd = "timeout 240 ";
  if (!with_display) cmd += "env -u DISPLAY -u WAYLAND_DISPLAY ";
  else VirtualDisplay::ensure();
  cmd += shell_quote(TILESCOPE_GUI_BINARY);
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  cmd += " 2>&1";
  ProcessResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace ts::test
