// spoken_list (base/list_text.h): the one "a, b and c" of every message.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/list_text.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

TEST(SpokenList, JoinsTheLastTwoWithTheConjunctionAndTheRestWithCommas) {
  EXPECT_EQ(spoken_list(std::vector<std::string>{}, "and"), "");
  EXPECT_EQ(spoken_list(std::vector<std::string>{"m"}, "and"), "m");
  EXPECT_EQ(spoken_list(std::vector<std::string>{"m", "O"}, "and"), "m and O");
  EXPECT_EQ(spoken_list(std::vector<std::string>{"m", "l", "O"}, "and"), "m, l and O");
  EXPECT_EQ(spoken_list(std::vector<std::string>{"32", "64", "128", "256"}, "or"), "32, 64, 128 or 256");
  EXPECT_EQ(spoken_list(std::vector<std::string>{"fp16", "bf16"}, "or"), "fp16 or bf16");
}

// Any list reads back item by item: the items in order, ", " between all but the last two, the
// conjunction between those.
TEST(SpokenList, ReadsBackAsItsItems) {
  TS_SEEDED(seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(2, 9)(rng);
    std::vector<std::string> items;
    for (size_t i = 0; i < n; ++i) {
      std::string word;
      const size_t length = std::uniform_int_distribution<size_t>(1, 6)(rng);
      for (size_t c = 0; c < length; ++c) word += static_cast<char>('a' + std::uniform_int_distribution<int>(0, 25)(rng));
      items.push_back(word);
    }
    const std::string conjunction = std::uniform_int_distribution<int>(0, 1)(rng) ? "and" : "or";
    const std::string text = spoken_list(items, conjunction);
    const std::string last = " " + conjunction + " " + items.back();
    ASSERT_GE(text.size(), last.size());
    EXPECT_EQ(text.substr(text.size() - last.size()), last) << text;
    std::vector<std::string> read;
    const std::string head = text.substr(0, text.size() - last.size());
    for (size_t begin = 0;;) {
      const size_t comma = head.find(", ", begin);
      read.push_back(head.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
      if (comma == std::string::npos) break;
      begin = comma + 2;
    }
    read.push_back(items.back());
    EXPECT_EQ(read, items) << text;
  }
}

}  // namespace
}  // namespace ts
