// Frame statistics: nearest-rank median and p99 against a sort done here, warm-up frames left
// out, and the JSON file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "app/gui/frame_stats.h"
#include "instrumentation/trace/file_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(FrameStats, MedianAndP99AreNearestRank) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> ms(1.5, 0.4);
  for (size_t n : {1u, 2u, 99u, 100u, 101u, 1000u}) {
    FrameStats stats(3);
    std::vector<double> kept;
    for (size_t i = 0; i < n + 3; ++i) {
      const double v = i < 3 ? 1000.0 : ms(rng);  // slow warm-up frames must not count
      stats.add(v);
      if (i >= 3) kept.push_back(v);
    }
    std::sort(kept.begin(), kept.end());
    const FrameSummary s = stats.summary();
    EXPECT_EQ(s.frames, n);
    // Nearest rank: the ceil(p * n)-th smallest.
    EXPECT_EQ(s.median_ms, kept[static_cast<size_t>(std::ceil(0.5 * n)) - 1]) << n;
    EXPECT_EQ(s.p99_ms, kept[static_cast<size_t>(std::ceil(0.99 * n)) - 1]) << n;
    EXPECT_EQ(s.max_ms, kept.back());
    EXPECT_EQ(s.min_ms, kept.front());
    EXPECT_LT(s.max_ms, 1000.0);
  }
  EXPECT_EQ(FrameStats(2).summary().frames, 0u);
}

TEST(FrameStats, JsonHoldsSummaryFramesAndContext) {
  test::TempDir dir;
  FrameStats stats(1);
  for (double v : {50.0, 4.0, 2.0, 3.0}) stats.add(v);
  stats.write_json(dir.path() / "f.json", {{"renderer", "test"}});
  std::ifstream in(dir.path() / "f.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["summary"]["frames"], 3);
  EXPECT_EQ(j["summary"]["median_ms"], 3.0);
  EXPECT_EQ(j["frames_ms"].size(), 4u);
  EXPECT_EQ(j["warmup_frames"], 1);
  EXPECT_EQ(j["context"]["renderer"], "test");
  EXPECT_THROW(stats.write_json(dir.path() / "missing" / "f.json", {}), FileWriteError);
}

}  // namespace
}  // namespace ts
