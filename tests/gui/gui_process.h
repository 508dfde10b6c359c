// Runs the tilescope-gui binary for a test and captures its exit code and output. With a
// display wanted and none set ($DISPLAY empty), the run goes through `xvfb-run -a`; without,
// DISPLAY and WAYLAND_DISPLAY are removed from its environment.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ts::testing {

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

inline ProcessResult run_gui(const std::vector<std::string>& args, bool with_display = true) {
  std::string cmd = "timeout 240 ";
  if (!with_display) cmd += "env -u DISPLAY -u WAYLAND_DISPLAY ";
  else if (!display_available()) cmd += "xvfb-run -a -s '-screen 0 1920x1080x24' ";
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

}  // namespace ts::testing
