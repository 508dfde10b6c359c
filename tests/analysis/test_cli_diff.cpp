// `tilescope diff` and `tilescope export`, run as the real binary on traces it captured: exit
// codes (0 clean, 1 divergence, 2 bad input), the readable report, the JSON fields, the files.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class CliDiff : public ::testing::Test {
 protected:
  Result run(const std::string& args) {
    const std::filesystem::path out = tmp_.path() / "stdout.txt", err = tmp_.path() / "stderr.txt";
    const std::string command = std::string("'") + TS_TILESCOPE_EXE + "' " + args + " > '" + out.string() + "' 2> '" +
                                err.string() + "'";
    const int status = std::system(command.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  // Captures a small run on the CPU backend; returns the trace's path.
  // `exit_code`: 2 for a capture whose trace buffer overflows (the trace is still written).
  std::string capture(const std::string& name, const std::string& config, uint64_t seed, int exit_code = 0) {
    const std::string path = (tmp_.path() / (name + ".trace.safetensors")).string();
    const Result r = run("capture --backend cpu --workers 1 --seed " + std::to_string(seed) + " " + config + " -o " + path);
    EXPECT_EQ(r.code, exit_code) << r.err;
    return path;
  }
  test::TempDir tmp_;
};

constexpr const char* kSplitk = "--kernel splitk --heads 2 --seq-q 24 --seq-kv 600 --head-dim 64 --splits 3";

// A full trace buffer: most events were dropped, so a diff that finds nothing wrong in what it
// recorded (the first events and the kernel's output) must not pass: the trace is incomplete.
// A bug the output shows is found even so.
TEST_F(CliDiff, TraceWithDroppedEventsIsNotAPass) {
  TS_SEEDED(seed);
  const std::string partial = capture("dropped", std::string(kSplitk) + " --capacity 5", seed, 2);
  Result r = run("diff " + partial);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("the trace is incomplete"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("events were dropped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--capacity"), std::string::npos) << r.err;
  r = run("diff --json " + partial);
  EXPECT_EQ(r.code, 2) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["dropped_events"].get<int64_t>(), 0);
  r = run("export " + partial + " -o " + (tmp_.path() / "dropped_export").string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("incomplete"), std::string::npos) << r.err;
  // The reduce's bug with its events dropped: the output, always compared, shows it.
  const std::string faulty = capture("faulty", std::string(kSplitk) + " --fault double_count_l --capacity 5", seed, 2);
  r = run("diff " + faulty);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("first divergence: output"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dropped because the trace buffer was full"), std::string::npos) << r.out;
  // The same capture with room for every event finds the reduce's bug.
  const std::string full = capture("full", std::string(kSplitk) + " --fault double_count_l", seed);
  EXPECT_EQ(run("diff " + full).code, 1);
}

TEST_F(CliDiff, ExitCodesReportAndJson) {
  TS_SEEDED(seed);
  const std::string bad = capture("bad", std::string(kSplitk) + " --fault double_count_l", seed);
  const std::string good = capture("good", kSplitk, seed);

  Result r = run("diff " + good);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict:          clean"), std::string::npos) << r.out;

  r = run("diff " + bad);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("DIVERGENCE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("splitk.reduce: the merge weights each merged state's O by its sum l again"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("final and output are wrong only through it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mechanism:        reduce_scaled_by_l"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("where:            splitk.reduce: batch 0, all heads (0-1), all queries (0-23)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("worst cell:       O"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first divergence: splitk.reduce, batch 0 head 0, queries 0-7, split 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("splitk.partial"), std::string::npos) << "the per-stage table";

  r = run("diff --json " + bad);
  EXPECT_EQ(r.code, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "divergence");
  EXPECT_EQ(j["symptom_kind"], "reduce_scaled_by_l");
  EXPECT_FALSE(j["symptom"].get<std::string>().empty());
  EXPECT_EQ(j["mechanism"]["id"], "reduce_scaled_by_l");
  EXPECT_EQ(j["origin_stage"], "splitk.reduce");
  EXPECT_GT(j["mechanism"]["numbers"]["wrong_rows"].get<double>(), 0);
  EXPECT_TRUE(j["failing_sets"]["splitk.reduce"]["heads"]["all"].get<bool>());
  EXPECT_TRUE(j["worst_cell"]["place"]["stage"].is_string());
  EXPECT_GT(j["worst_cell"]["error_over_allowed"].get<double>(), 1.0);
  EXPECT_FALSE(j["tolerance"]["rule"].get<std::string>().empty());
  const auto& f = j["first_divergence"];
  EXPECT_EQ(f["stage"], "splitk.reduce");
  EXPECT_EQ(f["batch"], 0);
  EXPECT_EQ(f["head"], 0);
  EXPECT_EQ(f["q_begin"], 0);
  EXPECT_EQ(f["split"], 0);
  EXPECT_EQ(f["query_row"], 0);
  EXPECT_EQ(j["stages"]["splitk.partial"]["events"]["failing"], 0);
  EXPECT_GT(j["stages"]["splitk.reduce"]["o_norm"]["max_abs"].get<double>(), 0.1);

  // A/B: the fault against the fixed kernel; an explicit tolerance loose enough to pass it.
  r = run("diff " + bad + " --against " + good + " --json");
  EXPECT_EQ(r.code, 1) << r.err;
  const nlohmann::json ab = nlohmann::json::parse(r.out);
  EXPECT_EQ(ab["first_difference"]["stage"], "splitk.reduce");
  EXPECT_EQ(ab["b"]["verdict"], "clean");
  EXPECT_EQ(run("diff " + bad + " --tol 1e6").code, 0);
}

// GQA/MQA, sliding windows and softcaps, captured and diffed through the real binary: the
// trace describes them (the attention the reference reads), every planned event was written, and
// the correct kernels' runs are clean; a fault still shows under them.
TEST_F(CliDiff, GqaWindowAndSoftcapRunsDiffClean) {
  TS_SEEDED(seed);
  struct Case {
    const char* name;
    const char* config;
    int64_t heads_q, heads_kv, window_left, window_right;
    double softcap;
  };
  const Case cases[] = {
      {"splitk_gqa_window", "--kernel splitk --heads 4 --heads-kv 2 --seq-q 5 --seq-kv 900 --head-dim 64 --splits 4 "
       "--causal --window 200,0 --softcap 30 --dtype bf16", 4, 2, 200, 0, 30.0},
      {"splitk_mqa_decode", "--kernel splitk --batch 2 --heads 8 --heads-kv 1 --seq-q 1 --seq-kv 700 --head-dim 128 "
       "--window -1,-1", 8, 1, -1, -1, 0.0},
      {"fa1_mqa_band", "--kernel fa1 --heads 3 --heads-kv 1 --seq-q 150 --seq-kv 200 --head-dim 32 --window 40,10 "
       "--softcap 20 --dtype fp16", 3, 1, 40, 10, 20.0},
      {"fa1_gqa_left", "--kernel fa1 --heads 4 --heads-kv 2 --seq-q 130 --seq-kv 130 --head-dim 64 --causal "
       "--window 64,-1", 4, 2, 64, -1, 0.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string trace = capture(c.name, c.config, seed);
    Result r = run("diff " + trace);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("verdict:          clean"), std::string::npos) << r.out;
    r = run("diff --json " + trace);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["verdict"], "clean") << r.out;

    r = run("info --json " + trace);
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json info = nlohmann::json::parse(r.out);
    const nlohmann::json& a = info["attention"];
    EXPECT_EQ(a["heads_q"], c.heads_q);
    EXPECT_EQ(a["heads_kv"], c.heads_kv);
    EXPECT_EQ(a["window_left"], c.window_left);
    EXPECT_EQ(a["window_right"], c.window_right);
    EXPECT_EQ(a["softcap"], c.softcap);
    EXPECT_EQ(info["config"]["heads_kv"], c.heads_kv);
    // K and V once per kv head of each batch entry.
    EXPECT_EQ(info["inputs"]["kv_heads"].size(), info["inputs"]["query_heads"].size() / size_t(c.heads_q / c.heads_kv));
    for (const auto& stage : info["stages"]) EXPECT_EQ(stage["never_written"], 0) << stage["name"];
  }

  // A/B of two split counts under GQA and a window: compared at the output, which agrees.
  const std::string four = capture("ab4", std::string(cases[0].config), seed);
  const std::string eight =
      capture("ab8", "--kernel splitk --heads 4 --heads-kv 2 --seq-q 5 --seq-kv 900 --head-dim 64 --splits 8 "
                     "--causal --window 200,0 --softcap 30 --dtype bf16", seed);
  Result r = run("diff " + four + " --against " + eight);
  EXPECT_EQ(r.code, 0) << r.out << r.err;

  // The reduce's bug under GQA, a window and a softcap: found, at the reduce.
  const std::string bad = capture("bad", std::string(cases[0].config) + " --fault double_count_l", seed);
  r = run("diff --json " + bad);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["symptom_kind"], "reduce_scaled_by_l") << j["symptom"];
  EXPECT_EQ(j["first_divergence"]["stage"], "splitk.reduce");
}

TEST_F(CliDiff, BadInputIsExitTwoWithAMessage) {
  TS_SEEDED(seed);
  const std::string a = capture("a", kSplitk, seed);
  Result r = run("diff " + a + " --tol nope");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--tol"), std::string::npos) << r.err;

  r = run("diff " + (tmp_.path() / "missing.trace.safetensors").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(r.err.empty());

  std::ofstream(tmp_.path() / "junk.trace.safetensors") << "not a trace";
  r = run("diff " + (tmp_.path() / "junk.trace.safetensors").string());
  EXPECT_EQ(r.code, 2) << r.err;

  // Other inputs, or another problem: not comparable.
  const std::string other_seed = capture("b", kSplitk, seed + 1);
  r = run("diff " + a + " --against " + other_seed);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("NOT COMPARED: the runs' inputs differ: q of batch 0 head 0 first differs at [0, 0]"),
            std::string::npos)
      << r.err;
  // The report calls it what it is, not a divergence (was "verdict: DIVERGENCE", exit 2).
  EXPECT_NE(r.out.find("verdict:          NOT COMPARED: the runs' inputs differ (q of batch 0 head 0"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("DIVERGENCE"), std::string::npos) << r.out;
  r = run("diff --json " + a + " --against " + other_seed);
  EXPECT_EQ(r.code, 2);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "not_compared");
  EXPECT_EQ(j["inputs_identical"], false);
  const std::string other_size = capture("c", "--kernel splitk --heads 2 --seq-q 24 --seq-kv 601 --head-dim 64", seed);
  r = run("diff " + a + " --against " + other_size);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("seq_kv 600 vs 601"), std::string::npos) << r.err;
}

TEST_F(CliDiff, ExportWritesTheEvidence) {
  TS_SEEDED(seed);
  const std::string bad = capture("bad", "--kernel fa1 --seq-q 100 --seq-kv 40 --causal --dtype fp16 --fault masked_nan", seed);
  const std::filesystem::path dir = tmp_.path() / "evidence";
  Result r = run("export " + bad + " -o " + dir.string());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("hold NaN where they should hold m = -inf, l = 0, O = 0"), std::string::npos) << r.out;
  for (const char* f : {"summary.json", "overview_b0_h0.png", "fa1_step_b0_h0.npy", "first_divergence.png",
                        "first_divergence_o_norm_trace.npy"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "summary.json"))["symptom_kind"], "nan_fully_masked");

  std::ofstream(tmp_.path() / "file") << "x";
  r = run("export " + bad + " -o " + (tmp_.path() / "file" / "sub").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot create the export folder"), std::string::npos) << r.err;
}

// Progress (TILESCOPE_TEST_PROGRESS_AT_ONCE: drawn from the first update, however short the
// work): a trace that records its inputs as their seed shows them re-made, then its row blocks
// compared; the bar is on stderr and cleared, the report on stdout is the one without it.
TEST_F(CliDiff, ProgressShowsReMakingAndComparingOnStderrOnly) {
  TS_SEEDED(seed);
  const std::string trace = capture("compact", kSplitk, seed);
  const Result quiet = run("diff " + trace);
  setenv("TILESCOPE_TEST_PROGRESS_AT_ONCE", "1", 1);
  const Result shown = run("diff --progress " + trace);
  const Result exported = run("export --progress " + trace + " -o " + (tmp_.path() / "out").string());
  unsetenv("TILESCOPE_TEST_PROGRESS_AT_ONCE");
  EXPECT_EQ(shown.code, quiet.code);
  EXPECT_EQ(shown.out, quiet.out);
  EXPECT_EQ(quiet.err, "");
  EXPECT_NE(shown.err.find("diff: re-making inputs ["), std::string::npos) << shown.err;
  EXPECT_NE(shown.err.find("diff: comparing ["), std::string::npos) << shown.err;
  EXPECT_NE(shown.err.find("row blocks"), std::string::npos) << shown.err;
  EXPECT_EQ(shown.err.substr(shown.err.size() - 4), "\r\033[K") << "the bar's line is cleared";
  EXPECT_NE(exported.err.find("export: comparing ["), std::string::npos) << exported.err;
}

TEST_F(CliDiff, ExportSaysWhichPairsHaveFilesWhenNotAll) {
  // Was: an export of 2 batches x 3 heads wrote the grids of 4 pairs and said nothing of the
  // other 2.
  TS_SEEDED(seed);
  const std::string trace =
      capture("pairs", "--kernel fa1 --batch 2 --heads 3 --seq-q 20 --seq-kv 70 --head-dim 32", seed);
  const std::filesystem::path dir = tmp_.path() / "out";
  const Result r = run("export " + trace + " -o " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("files of 4 of the 6 (batch, head) pairs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch 0 head 0, batch 0 head 1, batch 0 head 2 and batch 1 head 0; the others"),
            std::string::npos)
      << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(j["pairs"]["of"], 6);
  EXPECT_EQ(j["pairs"]["exported"], nlohmann::json::parse("[[0, 0], [0, 1], [0, 2], [1, 0]]"));
  EXPECT_TRUE(std::filesystem::exists(dir / "final_b1_h0.png"));
  EXPECT_FALSE(std::filesystem::exists(dir / "final_b1_h1.png"));
  // All pairs fit: nothing to say.
  const std::string small = capture("two", "--kernel fa1 --heads 2 --seq-q 20 --seq-kv 70 --head-dim 32", seed);
  const Result all = run("export " + small + " -o " + (tmp_.path() / "out2").string());
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(all.out.find("pairs"), std::string::npos) << all.out;
}

TEST_F(CliDiff, WorkersAreBoundedAsCapturesAre) {
  // Was: diff --workers 100000 started that many threads (4 x the time, 1.7 x the memory of the
  // default on a 200 MiB trace); capture refuses more than 1024 workers.
  TS_SEEDED(seed);
  const std::string trace = capture("w", kSplitk, seed);
  for (const std::string& command : {"diff " + trace, "export " + trace + " -o " + (tmp_.path() / "out").string()}) {
    const Result r = run(command + " --workers 1025");
    EXPECT_EQ(r.code, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("--workers must be between 0 (all cores) and 1024 (got 1025)"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp_.path() / "out"));
    EXPECT_EQ(run(command + " --workers 3").code, 0) << command;
  }
}

}  // namespace
}  // namespace ts
