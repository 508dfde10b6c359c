// The recent-files list: newest first, bounded, each file once however its path is spelled,
// kept across restarts in a JSON file written atomically, where XDG says; a damaged or
// unwritable store is reported, not fatal.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "app/model/viewer/recent_files.h"
#include "instrumentation/trace/file_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename());
  return out;
}

TEST(RecentFiles, NewestFirstBoundedAndEachFileOnce) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  const size_t cap = 3 + rng() % 6;
  RecentFiles recent(dir.path() / "cfg" / "recent.json", cap);
  // A random sequence of opens from a small pool, modelled independently: the expected list
  // is the distinct files by last open, newest first, cut at the cap.
  std::vector<fs::path> pool;
  for (int i = 0; i < 12; ++i) pool.push_back(dir.path() / ("run" + std::to_string(i) + ".trace.safetensors"));
  std::vector<std::pair<fs::path, int>> last_open;
  for (int t = 0; t < 60; ++t) {
    const fs::path& p = pool[rng() % pool.size()];
    recent.add(p);
    bool seen = false;
    for (auto& [q, when] : last_open)
      if (q == p) when = t, seen = true;
    if (!seen) last_open.push_back({p, t});
  }
  std::sort(last_open.begin(), last_open.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::vector<fs::path> want;
  for (size_t i = 0; i < last_open.size() && i < cap; ++i) want.push_back(last_open[i].first);
  EXPECT_EQ(recent.entries(), want);

  // Kept across a restart.
  RecentFiles again(recent.store(), cap);
  EXPECT_EQ(again.load(), "");
  EXPECT_EQ(again.entries(), want);
}

TEST(RecentFiles, PathsAreComparedAbsoluteAndNormalised) {
  test::TempDir dir;
  RecentFiles recent(dir.path() / "recent.json");
  const fs::path a = dir.path() / "a.trace.safetensors";
  recent.add(a);
  recent.add(dir.path() / "sub" / ".." / "a.trace.safetensors");
  recent.add(dir.path() / "." / "a.trace.safetensors");
  ASSERT_EQ(recent.entries().size(), 1u);
  EXPECT_EQ(recent.entries()[0], a.lexically_normal());
  // A relative path is made absolute against the working folder.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  recent.add("b.trace.safetensors");
  fs::current_path(cwd);
  ASSERT_EQ(recent.entries().size(), 2u);
  EXPECT_EQ(recent.entries()[0], (dir.path() / "b.trace.safetensors").lexically_normal());
  EXPECT_TRUE(recent.entries()[0].is_absolute());
}

TEST(RecentFiles, StoreIsWrittenAtomicallyAsJson) {
  test::TempDir dir;
  const fs::path store = dir.path() / "tilescope" / "recent.json";
  RecentFiles recent(store);
  recent.add(dir.path() / "x.trace.safetensors");
  recent.add(dir.path() / "y.trace.safetensors");
  EXPECT_EQ(files_in(store.parent_path()), std::vector<fs::path>{"recent.json"}) << "no temporary file left";
  std::ifstream in(store);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_TRUE(j["recent"].is_array());
  ASSERT_EQ(j["recent"].size(), 2u);
  EXPECT_EQ(j["recent"][0], (dir.path() / "y.trace.safetensors").string());
  recent.remove(dir.path() / "y.trace.safetensors");
  RecentFiles again(store);
  again.load();
  EXPECT_EQ(again.entries(), std::vector<fs::path>{dir.path() / "x.trace.safetensors"});

  // A bare file name (--recent-store recent.json): in the current folder, no folder to make.
  const fs::path was = fs::current_path();
  fs::current_path(store.parent_path());
  RecentFiles here(fs::path("here.json"));
  EXPECT_NO_THROW(here.add(dir.path() / "z.trace.safetensors"));
  fs::current_path(was);
  EXPECT_TRUE(fs::is_regular_file(store.parent_path() / "here.json"));
}

TEST(RecentFiles, ADamagedStoreIsReportedAndReplaced) {
  test::TempDir dir;
  const fs::path store = dir.path() / "recent.json";
  for (const char* text : {"{not json", "[1, 2]", "{\"recent\": 5}"}) {
    SCOPED_TRACE(text);
    std::ofstream(store) << text;
    RecentFiles recent(store);
    const std::string why = recent.load();
    EXPECT_NE(why.find(store.string()), std::string::npos) << why;
    EXPECT_NE(why.find("damaged"), std::string::npos) << why;
    EXPECT_TRUE(recent.entries().empty());
    recent.add(dir.path() / "z.trace.safetensors");
    RecentFiles again(store);
    EXPECT_EQ(again.load(), "");
    EXPECT_EQ(again.entries().size(), 1u);
  }
  // Entries that are not paths are skipped, duplicates and overflow dropped.
  std::ofstream(store) << R"({"recent": ["/a", 3, "", "/b", "/a", "/c", "/d"]})";
  RecentFiles recent(store, 3);
  EXPECT_EQ(recent.load(), "");
  EXPECT_EQ(recent.entries(), (std::vector<fs::path>{"/a", "/b", "/c"}));
  // A missing store is simply an empty list.
  RecentFiles none(dir.path() / "absent" / "recent.json");
  EXPECT_EQ(none.load(), "");
  EXPECT_TRUE(none.entries().empty());
}

// Loads `store` in a child process that may take 10 s and (outside AddressSanitizer, which
// reserves terabytes) 512 MiB of address space; returns what load() said, or why the child died.
std::string load_in_a_bounded_child(const fs::path& store) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "no pipe";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::alarm(10);
#if !defined(__SANITIZE_ADDRESS__)
    const rlimit limit{rlim_t{512} << 20, rlim_t{512} << 20};
    ::setrlimit(RLIMIT_AS, &limit);
#endif
    RecentFiles recent(store);
    const std::string why = "loaded: " + recent.load();
    ssize_t ignored = ::write(pipe_fds[1], why.data(), why.size());
    (void)ignored;
    ::_exit(recent.entries().empty() ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buffer[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "failed: " + out;
  return out;
}

TEST(RecentFiles, AStoreThatIsAFifoOrADeviceIsRefusedWithoutHangingOrFillingMemory) {
  // Was: a FIFO as the store hung the viewer at start; /dev/zero ate 3 GB.
  test::TempDir dir;
  const fs::path fifo = dir.path() / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", dir.path() / "zero.json");
  std::ofstream(dir.path() / "huge.json") << std::string(RecentFiles::kMaxStoreBytes + 1, ' ');
  const std::pair<fs::path, std::string> cases[] = {{fifo, "it is a FIFO (named pipe), not a regular file"},
                                                    {dir.path() / "zero.json", "it is a character device"},
                                                    {dir.path() / "huge.json", "more than the 1048576 it may hold"}};
  for (const auto& [store, what] : cases) {
    const std::string why = load_in_a_bounded_child(store);
    EXPECT_EQ(why.rfind("loaded: ", 0), 0u) << store << ": " << why;
    EXPECT_NE(why.find(what), std::string::npos) << why;
    EXPECT_NE(why.find("the recent-files list is not used"), std::string::npos) << why;
  }
  // Nor is one written over: saving to the FIFO is an error, and it stays a FIFO.
  RecentFiles recent(fifo);
  EXPECT_THROW(recent.add(dir.path() / "a.trace.safetensors"), FileWriteError);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(recent.entries().size(), 1u) << "the list in memory is kept";
}

TEST(RecentFiles, AnUnwritableStoreThrowsNamingItAndKeepsTheListInMemory) {
  test::TempDir dir;
  std::ofstream(dir.path() / "not-a-folder") << "x";
  const fs::path store = dir.path() / "not-a-folder" / "recent.json";
  RecentFiles recent(store);
  try {
    recent.add(dir.path() / "a.trace.safetensors");
    FAIL() << "expected FileWriteError";
  } catch (const FileWriteError& e) {
    EXPECT_NE(std::string(e.what()).find(store.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(recent.entries().size(), 1u);
  // No store at all (no home folder): a list in memory.
  RecentFiles memory{fs::path()};
  memory.add("/a");
  EXPECT_EQ(memory.load(), "");
}

TEST(RecentFiles, DefaultStoreFollowsXdgThenHome) {
  const char* old_xdg = std::getenv("XDG_CONFIG_HOME");
  const char* old_home = std::getenv("HOME");
  const std::string saved_xdg = old_xdg ? old_xdg : "", saved_home = old_home ? old_home : "";
  ::setenv("XDG_CONFIG_HOME", "/tmp/xdg-test", 1);
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(RecentFiles::default_store(), fs::path("/tmp/xdg-test/tilescope/recent.json"));
  ::setenv("XDG_CONFIG_HOME", "relative/ignored", 1);
  EXPECT_EQ(RecentFiles::default_store(), fs::path("/home/someone/.config/tilescope/recent.json"));
  ::unsetenv("XDG_CONFIG_HOME");
  EXPECT_EQ(RecentFiles::default_store(), fs::path("/home/someone/.config/tilescope/recent.json"));
  ::unsetenv("HOME");
  EXPECT_TRUE(RecentFiles::default_store().empty());
  if (old_xdg) ::setenv("XDG_CONFIG_HOME", saved_xdg.c_str(), 1);
  if (old_home) ::setenv("HOME", saved_home.c_str(), 1);
}

}  // namespace
}  // namespace ts
