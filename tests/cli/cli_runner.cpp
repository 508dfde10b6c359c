#include "tests/cli/cli_runner.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ts::test {

std::string tilescope_exe() {
  if (const char* e = std::getenv("TILESCOPE_EXE")) return e;
  // The build tree's layout, wherever the tree was copied: <build>/tests/cli/<this test> and
  // <build>/app/cli/tilescope.
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto sibling = (self.parent_path() / ".." / ".." / "app" / "cli" / "tilescope").lexically_normal();
    if (std::filesystem::exists(sibling, ec)) return sibling.string();
  }
  return TS_TILESCOPE_EXE;
}

pid_t spawn_tilescope(const std::vector<std::string>& args, const std::filesystem::path& out,
                      const std::filesystem::path& err, const std::vector<int>& ignored) {
  std::vector<std::string> argv_storage;
  argv_storage.push_back(tilescope_exe());
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error("cannot create the output files");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    struct sigaction action {};
    sigemptyset(&action.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) {
      action.sa_handler = std::find(ignored.begin(), ignored.end(), s) != ignored.end() ? SIG_IGN : SIG_DFL;
      ::sigaction(s, &action, nullptr);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  return pid;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CliRun run_tilescope(const std::vector<std::string>& args, const std::filesystem::path& scratch) {
  const auto out = scratch / "cli.stdout", err = scratch / "cli.stderr";
  CliRun r;
  r.exit_code = wait_exit_code(spawn_tilescope(args, out, err));
  r.out = read_text(out);
  r.err = read_text(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace ts::test
