// What `tilescope` promises about files (docs/file-safety.md), through the real binary: no file
// of the user's is lost (an export replaces only its own earlier export; no output onto a
// device, FIFO or an input), cancelling leaves nothing half-written (real signals, sent at a
// deterministic point: the test hook TILESCOPE_TEST_HOLD_BEFORE_RENAME), text from files is
// shown escaped, a report that cannot be written is exit 3, integer options are checked, and
// inputs of the wrong shape are refused from their header.
#include <gtest/gtest.h>

#include <algorithm>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/tensor_files.h"
#include "base/random_inputs.h"
#include "tests/cli/cli_runner.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::run_tilescope;

constexpr const char* kHoldVariable = "TILESCOPE_TEST_HOLD_BEFORE_RENAME";

// Every file and folder under `dir` with its contents, to show that nothing changed.
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = e.path().lexically_relative(dir).string();
    if (e.is_symlink()) out[rel] = "-> " + fs::read_symlink(e.path()).string();
    else if (e.is_directory()) out[rel + "/"] = "";
    else if (e.is_regular_file()) out[rel] = test::read_text(e.path());
    else out[rel] = "(special)";
  }
  return out;
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

mode_t type_of(const fs::path& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st.st_mode & S_IFMT;
}

// The current folder of this process (and so of the programs it starts) for one scope.
class InFolder {
 public:
  explicit InFolder(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~InFolder() { fs::current_path(old_); }

 private:
  fs::path old_;
};

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

const std::vector<std::string> kSmallCapture = {"capture", "--backend", "cpu", "--workers", "1",
                                                "--seq-q", "16", "--seq-kv", "96"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class CliFileSafety : public ::testing::Test {
 protected:
  // A small clean trace.
  fs::path capture(const std::string& name) {
    const fs::path path = tmp_.path() / (name + ".trace.safetensors");
    const CliRun r = run_tilescope(with(kSmallCapture, {"-o", path.string()}), tmp_.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  }
  CliRun run(const std::vector<std::string>& args) { return run_tilescope(args, scratch()); }
  fs::path scratch() {
    const fs::path s = fs::temp_directory_path() / ("tilescope-scratch-" + std::to_string(::getpid()));
    fs::create_directories(s);
    return s;
  }
  ~CliFileSafety() override {
    std::error_code ec;
    fs::remove_all(scratch(), ec);
  }
  test::TempDir tmp_;
};

// --- exports never replace what is not their own --------------------------------------------

TEST_F(CliFileSafety, ExportRefusesAFolderHoldingASummaryJsonAndTheUsersFiles) {
  // Was: a folder with thesis.tex, src/main.c and a summary.json came back holding only the export.
  const fs::path trace = capture("run");
  const fs::path work = tmp_.path() / "work";
  fs::create_directories(work / "src");
  write_text(work / "thesis.tex", "\\documentclass{article}");
  write_text(work / "src" / "main.c", "int main(void) { return 0; }");
  write_text(work / "summary.json", "{\"mine\": true}");
  const auto before = tree(work);
  const CliRun r = run({"export", trace.string(), "-o", work.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot export to " + work.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not an earlier tilescope export"), std::string::npos) << r.err;
  EXPECT_EQ(tree(work), before);
}

TEST_F(CliFileSafety, ExportRefusesTheCurrentFolderAndAPathThatResolvesToTheUsersFolder) {
  // Was: "-o ." and "-o some/sub/.." replaced the folder when it held a summary.json.
  const fs::path trace = capture("run");
  const fs::path home = tmp_.path() / "home";
  fs::create_directories(home / "some" / "sub");
  write_text(home / "summary.json", "{}");
  write_text(home / "thesis.tex", "mine");
  write_text(home / "some" / "summary.json", "{}");
  write_text(home / "some" / "notes.txt", "mine too");
  const auto before = tree(home);
  const InFolder in(home);
  CliRun r = run({"export", trace.string(), "-o", "."});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("it is the current folder"), std::string::npos) << r.err;
  r = run({"export", trace.string(), "-o", "some/sub/.."});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not an earlier tilescope export"), std::string::npos) << r.err;
  EXPECT_EQ(tree(home), before);
}

TEST_F(CliFileSafety, ExportReplacesItsOwnEarlierExportAndNothingMore) {
  const fs::path trace = capture("run");
  const fs::path out = tmp_.path() / "out";
  ASSERT_EQ(run({"export", trace.string(), "-o", out.string()}).exit_code, 0);
  const CliRun again = run({"export", trace.string(), "-o", out.string()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  write_text(out / "my-notes.txt", "keep");
  const auto before = tree(out);
  const CliRun r = run({"export", trace.string(), "-o", out.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("it holds my-notes.txt, which the earlier export there did not write"), std::string::npos) << r.err;
  EXPECT_EQ(tree(out), before);
}

TEST_F(CliFileSafety, ExportHelpSaysWhatHappensToAnExistingFolder) {
  const CliRun r = run({"export", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* words : {"created if missing", "earlier export, which is replaced whole", "refused (exit 2)",
                            ".tilescope-export.json"})
    EXPECT_NE(r.out.find(words), std::string::npos) << words << "\n" << r.out;
}

// --- outputs never replace devices, FIFOs or inputs ------------------------------------------

TEST_F(CliFileSafety, OutputsOntoDevicesAndFifosAreRefusedAndLeftAsTheyWere) {
  // Was: -o /dev/full (or a FIFO) was replaced by a regular file, exit 0. Links stand for the
  // devices here: the test must not harm the machine when run against a writer without the check.
  const fs::path trace = capture("run");
  const fs::path fifo = tmp_.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink("/dev/full", tmp_.path() / "full_link");
  fs::create_symlink("/dev/null", tmp_.path() / "null_link");
  for (const char* name : {"fifo", "full_link", "null_link"}) {
    SCOPED_TRACE(name);
    const fs::path target = tmp_.path() / name;
    const mode_t before = type_of(target);
    CliRun r = run(with(kSmallCapture, {"-o", target.string()}));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
    r = run({"export", trace.string(), "-o", target.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("not a folder"), std::string::npos) << r.err;
    EXPECT_EQ(type_of(target), before);
  }
  EXPECT_EQ(type_of("/dev/full"), S_IFCHR);
  EXPECT_EQ(type_of("/dev/null"), S_IFCHR);
  for (const auto& e : fs::directory_iterator(tmp_.path()))
    EXPECT_EQ(e.path().filename().string().rfind(".", 0), std::string::npos) << "left behind: " << e.path();
}

TEST_F(CliFileSafety, CaptureReplacesOnlyATrace) {
  // Was: -o notes.txt (a typo, a tab completion) replaced the notes with a trace, exit 0.
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::string notes(1 + rng() % 2000, ' ');
  for (char& ch : notes) ch = static_cast<char>('a' + rng() % 26);
  const fs::path mine = tmp_.path() / "notes.txt";
  write_text(mine, notes);
  const CliRun r = run(with(kSmallCapture, {"-o", mine.string()}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("it exists and is not a tilescope trace"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Captured"), std::string::npos) << "refused before the run: " << r.err;
  EXPECT_EQ(tree(tmp_.path()), (std::map<std::string, std::string>{{"notes.txt", notes}}));
  // A trace is replaced by the new one.
  const fs::path trace = capture("run");
  const std::string before = test::read_text(trace);
  const CliRun again = run(with(kSmallCapture, {"-o", trace.string(), "--seed", std::to_string(1 + rng() % 1000)}));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(test::read_text(trace), before);
}

TEST_F(CliFileSafety, CaptureRefusesToWriteOverItsOwnInput) {
  // Was: --inputs X.safetensors -o X.safetensors replaced the input with the trace.
  TS_SEEDED(seed);
  AttentionConfig c;
  c.seq_q = 16;
  c.seq_kv = 96;
  RandomInputSpec spec;
  spec.seed = seed;
  const AttentionInputs in = make_random_inputs(c, spec);
  const fs::path qkv = tmp_.path() / "qkv.safetensors";
  write_safetensors(qkv,
                    std::vector<TensorToWrite>{tensor_to_write("q", in.q), tensor_to_write("k", in.k),
                                               tensor_to_write("v", in.v)},
                    {});
  fs::create_symlink(qkv, tmp_.path() / "link.safetensors");
  fs::create_hard_link(qkv, tmp_.path() / "hard.safetensors");
  const std::string before = test::read_text(qkv);
  const InFolder here(tmp_.path());
  for (const std::string& out : {qkv.string(), std::string("./qkv.safetensors"), std::string("link.safetensors"),
                                std::string("hard.safetensors")}) {
    const CliRun r = run({"capture", "--backend", "cpu", "--seq-q", "16", "--seq-kv", "96", "--inputs", qkv.string(),
                          "-o", out});
    EXPECT_EQ(r.exit_code, 2) << out << ": " << r.err;
    EXPECT_NE(r.err.find("it is an input file of this capture"), std::string::npos) << r.err;
    EXPECT_EQ(test::read_text(qkv), before) << out;
  }
  // Three .npy files, the output one of them.
  for (const auto& [name, t] : {std::pair{"q.npy", &in.q}, std::pair{"k.npy", &in.k}, std::pair{"v.npy", &in.v}})
    write_npy(tmp_.path() / name, elem_type_of_dtype(t->dtype), t->shape, t->bytes.data());
  const std::string k_before = test::read_text(tmp_.path() / "k.npy");
  const CliRun r = run({"capture", "--backend", "cpu", "--seq-q", "16", "--seq-kv", "96", "--inputs", "q.npy", "k.npy",
                        "v.npy", "-o", "k.npy"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(test::read_text(tmp_.path() / "k.npy"), k_before);
}

// --- cancelling ------------------------------------------------------------------------------

// Starts `args` with the hold hook set, waits until the program holds before its first rename,
// sends `sig`, and returns the exit code.
int cancel_while_writing(const std::vector<std::string>& args, const fs::path& marker, const fs::path& so,
                         const fs::path& se, int sig) {
  const ScopedEnv hold(kHoldVariable, marker.string());
  const pid_t pid = test::spawn_tilescope(args, so, se);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);  // ASan is slow
  int status = 0;
  while (!fs::exists(marker) && std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ADD_FAILURE() << "the program ended before it held in the write phase: " << test::read_text(se);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(fs::exists(marker)) << "never reached the write phase";
  ::kill(pid, sig);
  return test::wait_exit_code(pid);
}

class CliCancelWhileWriting : public CliFileSafety, public ::testing::WithParamInterface<int> {};

TEST_P(CliCancelWhileWriting, CaptureKeepsThePreviousFileAndLeavesNoTemporaryFile) {
  // Was: SIGINT/SIGTERM printed "cancelling..." and wrote the file anyway (exit 0); SIGHUP left
  // a hidden temporary file.
  const fs::path out = capture("run");  // the previous trace
  const std::string previous = test::read_text(out);
  const fs::path marker = scratch() / "holding", so = scratch() / "so", se = scratch() / "se";
  const int code = cancel_while_writing(with(kSmallCapture, {"-o", out.string()}), marker, so, se, GetParam());
  EXPECT_EQ(code, 130) << test::read_text(se);
  EXPECT_NE(test::read_text(se).find("cancelled"), std::string::npos) << test::read_text(se);
  EXPECT_EQ(test::read_text(out), previous);
  EXPECT_EQ(tree(tmp_.path()), (std::map<std::string, std::string>{{"run.trace.safetensors", previous}}));
}

TEST_P(CliCancelWhileWriting, ExportLeavesNoStagingFolderAndNoParentItCreated) {
  // Was: no signal handling: a half-written hidden staging folder and the created parents stayed.
  const fs::path trace = capture("run");
  const fs::path marker = scratch() / "holding", so = scratch() / "so", se = scratch() / "se";
  const auto before = tree(tmp_.path());
  const int code = cancel_while_writing({"export", trace.string(), "-o", (tmp_.path() / "new" / "deep" / "out").string()},
                                        marker, so, se, GetParam());
  EXPECT_EQ(code, 130) << test::read_text(se);
  EXPECT_NE(test::read_text(se).find("cancelled"), std::string::npos) << test::read_text(se);
  EXPECT_EQ(tree(tmp_.path()), before);
}

INSTANTIATE_TEST_SUITE_P(Signals, CliCancelWhileWriting, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGINT ? "SIGINT" : info.param == SIGTERM ? "SIGTERM" : "SIGHUP");
                         });

TEST_P(CliCancelWhileWriting, ASignalIgnoredAtStartStaysIgnored) {
  // Was: the cancel handler replaced an inherited SIG_IGN, so `nohup tilescope capture ... &`
  // was cancelled when the terminal closed (SIGHUP), and a script's background capture by Ctrl-C.
  const int ignored = GetParam(), other = ignored == SIGTERM ? SIGINT : SIGTERM;
  const fs::path out = capture("run");  // the previous trace
  const std::string previous = test::read_text(out);
  const fs::path marker = scratch() / "holding", so = scratch() / "so", se = scratch() / "se";
  const ScopedEnv hold(kHoldVariable, marker.string());
  const pid_t pid = test::spawn_tilescope(with(kSmallCapture, {"-o", out.string()}), so, se, {ignored});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);  // ASan is slow
  while (!fs::exists(marker) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(marker)) << "never reached the write phase: " << test::read_text(se);
  ::kill(pid, ignored);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a handler would have said so by now
  EXPECT_EQ(test::read_text(se).find("cancelling"), std::string::npos) << test::read_text(se);
  // A signal that is not ignored still cancels (and ends the hold at once).
  ::kill(pid, other);
  EXPECT_EQ(test::wait_exit_code(pid), 130) << test::read_text(se);
  EXPECT_EQ(test::read_text(out), previous);
}

// --- what is printed ---------------------------------------------------------------------------

TEST_F(CliFileSafety, ReportsThatCannotBeWrittenAreExitThree) {
  // Was: diff --json > /dev/full exited 0 with nothing written.
  const fs::path trace = capture("run");
  const fs::path se = scratch() / "se";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"diff", "--json", trace.string()}, std::vector<std::string>{"diff", trace.string()},
        std::vector<std::string>{"info", trace.string()}, std::vector<std::string>{"info", "--json", trace.string()},
        std::vector<std::string>{"faults"}}) {
    const int code = test::wait_exit_code(test::spawn_tilescope(args, "/dev/full", se));
    EXPECT_EQ(code, 3) << args[0] << ": " << test::read_text(se);
    EXPECT_NE(test::read_text(se).find("cannot write the report to standard output (No space left on device)"),
              std::string::npos)
        << test::read_text(se);
  }
}

TEST_F(CliFileSafety, AReportIntoAClosedPipeIsExitThreeNotASilentDeath) {
  const fs::path trace = capture("run");
  const fs::path se = scratch() / "se";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);  // nobody reads: every write fails (EPIPE, and SIGPIPE unless ignored)
  std::string exe = test::tilescope_exe(), command = "diff", file = trace.string();
  char* argv[] = {exe.data(), command.data(), file.data(), nullptr};
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    const int err = ::open(se.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, STDERR_FILENO);
    ::execv(argv[0], argv);
    ::_exit(127);
  }
  ::close(fds[1]);
  EXPECT_EQ(test::wait_exit_code(pid), 3) << test::read_text(se);
  EXPECT_NE(test::read_text(se).find("cannot write the report to standard output (Broken pipe)"), std::string::npos)
      << test::read_text(se);
}

TEST_F(CliFileSafety, IntegerOptionsRefuseNegativeOverflowingAndNonDecimalValues) {
  // Was: --seed -1 and seeds past 2^64 silently wrapped to 2^64 - 1; 010 was octal.
  const fs::path trace = capture("run");
  const fs::path out = tmp_.path() / "x.trace.safetensors";
  const std::vector<std::vector<std::string>> refused = {
      with(kSmallCapture, {"--seed", "-1", "-o", out.string()}),
      with(kSmallCapture, {"--seed", "18446744073709551616", "-o", out.string()}),
      with(kSmallCapture, {"--seed", "99999999999999999999999", "-o", out.string()}),
      with(kSmallCapture, {"--seed", "0x10", "-o", out.string()}),
      with(kSmallCapture, {"--perturb-seed", "-3", "-o", out.string()}),
      with(kSmallCapture, {"--batch", "9223372036854775808", "-o", out.string()}),
      with(kSmallCapture, {"--capacity", "1e3", "-o", out.string()}),
      {"diff", trace.string(), "--workers", "-1"},
      {"export", trace.string(), "-o", (tmp_.path() / "e").string(), "--workers", "4294967296"},
  };
  for (const auto& args : refused) {
    const CliRun r = run(args);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args) << "\n" << r.err;
    const std::string option = args[args.size() - 2] == "-o" ? args[args.size() - 4] : args[args.size() - 2];
    EXPECT_NE(r.err.find(option), std::string::npos) << option << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(tmp_.path() / "e"));
  // The message says what is wrong, never the type's range as if it were the option's (--workers
  // -1 said "not a whole number from 0 to 18446744073709551615"; --workers takes 0 to 1024).
  for (const auto& [args, message] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"diff", trace.string(), "--workers", "-1"}, "'-1' is negative (give a whole number >= 0)"},
           {with(kSmallCapture, {"--seed", "0x10", "-o", out.string()}), "'0x10' is not a whole number (decimal digits only)"},
           {with(kSmallCapture, {"--seed", "18446744073709551616", "-o", out.string()}), "is too large"},
           {with(kSmallCapture, {"--batch", "9223372036854775808", "-o", out.string()}), "is outside"}}) {
    const CliRun r = run(args);
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    if (args[0] == "diff") {
      EXPECT_EQ(r.err.find("18446744073709551615"), std::string::npos) << r.err;
    }
  }
  // The largest seed is taken as it is, and leading zeros are decimal.
  ASSERT_EQ(run(with(kSmallCapture, {"--seed", "18446744073709551615", "-o", out.string()})).exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(run({"info", "--json", out.string()}).out)["metadata"]["inputs_seed"],
            "18446744073709551615");
  ASSERT_EQ(run(with(kSmallCapture, {"--seed", "010", "-o", out.string()})).exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(run({"info", "--json", out.string()}).out)["metadata"]["inputs_seed"], "10");
}

// `from` rewritten with extra metadata (the trace layer passes unknown keys through).
void rewrite_with_metadata(const fs::path& from, const fs::path& to, const std::map<std::string, std::string>& extra) {
  const SafetensorsFile file = SafetensorsFile::open(from);
  std::vector<TensorToWrite> tensors;
  for (const TensorInfo& t : file.tensors()) tensors.push_back({t.name, t.type, t.shape, file.bytes(t).data()});
  std::map<std::string, std::string> meta = file.metadata();
  for (const auto& [k, v] : extra) meta[k] = v;
  write_safetensors(to, tensors, meta);
}

bool has_control_characters(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  return false;
}

TEST_F(CliFileSafety, TextFromTheFileIsShownEscapedNeverObeyed) {
  // Was: escape sequences in a trace's metadata set the terminal's title and cleared the screen.
  const fs::path trace = capture("run");
  const std::string title = "\x1b]0;pwned\x07", clear = "\x1b[2J\x1b[H";
  const fs::path hostile = tmp_.path() / ("evil" + clear + ".trace.safetensors");
  rewrite_with_metadata(trace, hostile, {{"device", "gpu" + title + clear}, {"note" + clear, "a\rb\xc2\x9b" "c"}});
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"info", hostile.string()}, std::vector<std::string>{"info", "--json", hostile.string()},
        std::vector<std::string>{"diff", hostile.string()}, std::vector<std::string>{"diff", "--json", hostile.string()},
        std::vector<std::string>{"info", (tmp_.path() / ("missing" + title)).string()}}) {
    const CliRun r = run(args);
    EXPECT_LE(r.exit_code, 2) << r.err;
    EXPECT_FALSE(has_control_characters(r.out)) << ::testing::PrintToString(args) << "\n" << r.out;
    EXPECT_FALSE(has_control_characters(r.err)) << ::testing::PrintToString(args) << "\n" << r.err;
  }
  const CliRun info = run({"info", hostile.string()});
  EXPECT_NE(info.out.find("gpu\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("evil\\x1b[2J\\x1b[H.trace.safetensors"), std::string::npos) << info.out;
}

TEST_F(CliFileSafety, ALineBreakInTheFileDoesNotAddALineToTheMessage) {
  // A metadata value (or a tensor name) the error message quotes, with a line break and a line
  // of its own: it was printed as a second line, "verdict: clean" on stderr.
  const fs::path trace = capture("run");
  const fs::path hostile = tmp_.path() / "forged.trace.safetensors";
  rewrite_with_metadata(trace, hostile, {{"tilescope_format", "9\nverdict:          clean"}});
  for (const char* command : {"info", "diff"}) {
    const CliRun r = run({command, hostile.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("'9\\nverdict:          clean'"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// --- inputs --------------------------------------------------------------------------------

// A .npy of float32 `shape` whose data are a hole (sparse: nothing stored).
void write_sparse_npy(const fs::path& path, const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string head("\x93NUMPY\x01\x00", 8);
  head += static_cast<char>(dict.size() & 0xff);
  head += static_cast<char>(dict.size() >> 8);
  write_text(path, head + dict);
  uint64_t bytes = 4;
  for (int64_t d : shape) bytes *= static_cast<uint64_t>(d);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(head.size() + dict.size() + bytes)), 0);
}

TEST_F(CliFileSafety, InputsOfTheWrongShapeAreRefusedFromTheirHeaderAtOnce) {
  // Was: an 8 GiB .npy of the wrong shape was read whole (and the process killed) before its
  // shape was checked. Here the program may not even map that much: the header is all it reads.
  const fs::path q = tmp_.path() / "q.npy";
  write_sparse_npy(q, {1, 1, int64_t{1} << 25, 64});  // 8 GiB; the config wants [1, 1, 16, 64]
  write_sparse_npy(tmp_.path() / "k.npy", {1, 1, 96, 64});
  write_sparse_npy(tmp_.path() / "v.npy", {1, 1, 96, 64});
  std::vector<std::string> args = {test::tilescope_exe(), "capture", "--backend", "cpu", "--seq-q", "16",
                                   "--seq-kv", "96", "--inputs", q.string(), (tmp_.path() / "k.npy").string(),
                                   (tmp_.path() / "v.npy").string(), "-o", (tmp_.path() / "out.trace").string()};
  const fs::path se = scratch() / "se";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
#if !defined(__SANITIZE_ADDRESS__)
    // 2 GiB of address space: reading (or mapping) the file whole cannot fit. (AddressSanitizer
    // reserves terabytes of shadow, so its build runs without the limit.)
    const rlimit limit{rlim_t{2} << 30, rlim_t{2} << 30};
    ::setrlimit(RLIMIT_AS, &limit);
#endif
    const int err = ::open(se.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, STDERR_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  const int code = test::wait_exit_code(pid);
  const std::string err = test::read_text(se);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find(q.string() + ": input q has shape [1, 1, 33554432, 64] but the config needs [1, 1, 16, 64]"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(tmp_.path() / "out.trace"));
}

}  // namespace
}  // namespace ts
