// StagedFolder: an export folder appears whole or not at all, replaces an earlier export as a
// whole, and never overwrites a folder holding the user's other files.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "app/model/export/staged_folder.h"
#include "instrumentation/trace/file_error.h"
#include "tests/model/temp_dir.h"

namespace ts {
namespace {

std::set<std::string> names_in(const std::filesystem::path& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

TEST(StagedFolder, FilesAppearOnlyOnCommit) {
  testing::TempDir tmp;
  const auto dest = tmp.path() / "deep" / "out";
  {
    StagedFolder f(dest);
    write(f.path() / "summary.json", "{}");
    write(f.path() / "a.npy", "x");
    EXPECT_FALSE(std::filesystem::exists(dest));
    f.commit();
  }
  EXPECT_EQ(names_in(dest), (std::set<std::string>{"summary.json", "a.npy"}));
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"deep"});  // no staging folder left
}

TEST(StagedFolder, WithoutCommitNothingIsLeftBehind) {
  testing::TempDir tmp;
  const auto dest = tmp.path() / "new_parent" / "out";
  {
    StagedFolder f(dest);
    write(f.path() / "summary.json", "{}");
  }  // e.g. an exception while writing
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "staging and created parents removed";
}

TEST(StagedFolder, AnEarlierExportIsReplacedAsAWhole) {
  testing::TempDir tmp;
  const auto dest = tmp.path() / "out";
  std::filesystem::create_directories(dest);
  write(dest / "summary.json", "old");
  write(dest / "stale.png", "old");
  {
    StagedFolder f(dest);
    write(f.path() / "summary.json", "new");
    f.commit();
  }
  EXPECT_EQ(names_in(dest), std::set<std::string>{"summary.json"});
  std::ifstream in(dest / "summary.json");
  std::string text;
  in >> text;
  EXPECT_EQ(text, "new");
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"out"});
}

TEST(StagedFolder, AFolderOfOtherFilesIsRefusedAndKept) {
  testing::TempDir tmp;
  const auto dest = tmp.path() / "mine";
  std::filesystem::create_directories(dest);
  write(dest / "notes.txt", "keep me");
  EXPECT_THROW(StagedFolder{dest}, FileWriteError);
  EXPECT_EQ(names_in(dest), std::set<std::string>{"notes.txt"});
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"mine"});
}

}  // namespace
}  // namespace ts
