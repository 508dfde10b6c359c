// The rest of the CLI's surface: --help everywhere, --version, `tilescope faults`, Ctrl-C
// cancelling a capture cleanly (exit 130, no file, no temporary left behind), and a signal ending
// a diff with a message.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/model/capture/tool_version.h"
#include "base/attention_config.h"
#include "tests/cli/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace ts {
namespace {

using test::CliRun;
using test::run_tilescope;

TEST(CliMisc, HelpEverywhereAndVersion) {
  test::TempDir dir;
  const CliRun root = run_tilescope({"--help"}, dir.path());
  EXPECT_EQ(root.exit_code, 0) << root.err;
  for (const char* sub : {"capture", "info", "faults"}) {
    EXPECT_NE(root.out.find(sub), std::string::npos) << root.out;
    const CliRun r = run_tilescope({sub, "--help"}, dir.path());
    EXPECT_EQ(r.exit_code, 0) << sub << r.err;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub << r.out;
  }
  const CliRun cap = run_tilescope({"capture", "--help"}, dir.path());
  for (const char* option : {"--kernel", "--fault", "--backend", "--batch", "--heads", "--seq-q",
                             "--seq-kv", "--head-dim", "--dtype", "--causal", "--splits", "--scale",
                             "--seed", "--inputs", "--distribution", "--input-scale", "--preset",
                             "--trace-batch", "--trace-head", "--trace-queries", "--tile-events", "--stages",
                             "--capacity", "--no-trace", "--workers", "--perturb-seed",
                             "--progress", "--output"})
    EXPECT_NE(cap.out.find(option), std::string::npos) << option;
  const CliRun v = run_tilescope({"--version"}, dir.path());
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find(tool_version()), std::string::npos) << v.out;
  EXPECT_EQ(tool_version().rfind("tilescope 0.", 0), 0u);
}

TEST(CliMisc, FaultsListsEveryVariantWithItsKernelsAndDoc) {
  test::TempDir dir;
  const CliRun text = run_tilescope({"faults"}, dir.path());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const CliRun json = run_tilescope({"faults", "--json"}, dir.path());
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto list = nlohmann::json::parse(json.out);
  ASSERT_EQ(list.size(), all_faults().size());
  size_t i = 0;
  for (const FaultInfo& f : all_faults()) {
    EXPECT_NE(text.out.find(std::string(f.name)), std::string::npos) << f.name;
    EXPECT_NE(text.out.find(std::string(f.description)), std::string::npos) << f.name;
    const auto& e = list[i++];
    EXPECT_EQ(e.at("name").get<std::string>(), f.name);
    EXPECT_EQ(e.at("description").get<std::string>(), f.description);
    std::vector<std::string> kernels;
    if (f.fa1) kernels.push_back("fa1");
    if (f.splitk) kernels.push_back("splitk");
    if (f.fa2) kernels.push_back("fa2");
    if (f.splitk2) kernels.push_back("splitk2");
    EXPECT_EQ(e.at("kernels").get<std::vector<std::string>>(), kernels) << f.name;
  }
}

TEST(CliMisc, CtrlCCancelsCleanly) {
  test::TempDir dir;
  const auto out = dir.path() / "big.trace.safetensors";
  const auto so = dir.path() / "so.txt", se = dir.path() / "se.txt";
  // A run of many seconds on 2 cores (minutes under ASan); --progress shows when its kernels are
  // under way.
  const pid_t pid = test::spawn_tilescope(
      {"capture", "--backend", "cpu", "--workers", "2", "--heads", "16", "--seq-q", "2048",
       "--seq-kv", "2048", "--stages", "final", "--progress", "-o", out.string()},
      so, se);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (test::read_text(se).find("capturing: running kernels [") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(test::read_text(se).find("capturing: running kernels ["), std::string::npos) << test::read_text(se);
  ::kill(pid, SIGINT);
  const int code = test::wait_exit_code(pid);
  const std::string err = test::read_text(se);
  EXPECT_EQ(code, 130) << err;
  EXPECT_NE(err.find("cancelled"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_TRUE(e.path() == so || e.path() == se) << "left behind: " << e.path();
}

// diff writes no file: a signal ends it at once, saying so on stderr, with capture's exit code 130
// (was: SIGINT and SIGTERM ended it by their default action, without a word, exit 128 + signal).
TEST(CliMisc, DiffEndsOnASignalSayingSo) {
  test::TempDir dir;
  const auto trace = dir.path() / "run.trace.safetensors";
  // A diff of about 2.5 s on one thread of a quiet machine (its bar shows after half a second; at
  // 1024 x 1024 the diff took 0.6 s and could end before it).
  const CliRun cap = run_tilescope({"capture", "--backend", "cpu", "--heads", "16", "--seq-q", "2048", "--seq-kv",
                                    "2048", "--stages", "final", "-o", trace.string()},
                                   dir.path());
  ASSERT_EQ(cap.exit_code, 0) << cap.err;
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const auto so = dir.path() / "so.txt", se = dir.path() / "se.txt";
    const pid_t pid = test::spawn_tilescope({"diff", "--workers", "1", "--progress", trace.string()}, so, se);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (test::read_text(se).find("diff: ") == std::string::npos && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_NE(test::read_text(se).find("diff: "), std::string::npos) << "no progress bar: " << test::read_text(se);
    ::kill(pid, sig);
    const int code = test::wait_exit_code(pid);
    const std::string err = test::read_text(se);
    EXPECT_EQ(code, 130) << "signal " << sig << ": " << err;
    EXPECT_NE(err.find("tilescope: cancelled; nothing was written"), std::string::npos) << err;
    EXPECT_EQ(test::read_text(so).find("verdict"), std::string::npos) << "no report once cancelled";
  }
}

}  // namespace
}  // namespace ts
