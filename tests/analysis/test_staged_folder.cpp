// StagedFolder: an export folder appears whole or not at all, replaces only an earlier export
// that proves it is one (its own list of files, and nothing else in the folder), and never
// touches a folder holding anything of the user's: not one that merely holds a summary.json,
// not the current folder, not a device or FIFO.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/model/export/staged_folder.h"
#include "instrumentation/trace/file_error.h"
#include "tests/support/temp_dir.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// Every file under `dir` with its contents (relative paths).
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = e.path().lexically_relative(dir).string();
    if (e.is_directory()) {
      out[rel + "/"] = "";
      continue;
    }
    std::ifstream in(e.path());
    std::stringstream s;
    s << in.rdbuf();
    out[rel] = s.str();
  }
  return out;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// An export of `files` at `dest`, made the way export_run makes one.
void make_export(const fs::path& dest, const std::vector<std::string>& files, const std::string& text = "x") {
  StagedFolder f(dest);
  for (const std::string& name : files) {
    fs::create_directories((f.path() / name).parent_path());
    write(f.path() / name, text);
  }
  f.commit();
}

std::string refusal(const fs::path& dest) {
  try {
    StagedFolder f(dest);
    f.commit();
  } catch (const FileWriteError& e) {
    return e.what();
  }
  ADD_FAILURE() << "not refused: " << dest;
  return {};
}

// The current folder for one scope.
class InFolder {
 public:
  explicit InFolder(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~InFolder() { fs::current_path(old_); }

 private:
  fs::path old_;
};

TEST(StagedFolder, FilesAppearOnlyOnCommitWithTheirList) {
  test::TempDir tmp;
  const auto dest = tmp.path() / "deep" / "out";
  {
    StagedFolder f(dest);
    write(f.path() / "summary.json", "{}");
    write(f.path() / "a.npy", "x");
    EXPECT_FALSE(fs::exists(dest));
    f.commit();
  }
  EXPECT_EQ(names_in(dest), (std::set<std::string>{"summary.json", "a.npy", kExportListName}));
  EXPECT_EQ(earlier_export_files(dest, "out"), (std::vector<std::string>{"a.npy", "summary.json"}));
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"deep"});  // no staging folder left
}

TEST(StagedFolder, WithoutCommitNothingIsLeftBehind) {
  test::TempDir tmp;
  const auto dest = tmp.path() / "new_parent" / "out";
  {
    StagedFolder f(dest);
    write(f.path() / "summary.json", "{}");
  }  // e.g. an exception while writing
  EXPECT_TRUE(fs::is_empty(tmp.path())) << "staging and created parents removed";
}

TEST(StagedFolder, AnEarlierExportIsReplacedAsAWhole) {
  test::TempDir tmp;
  const auto dest = tmp.path() / "out";
  make_export(dest, {"summary.json", "stale.png", "a/summary.json"}, "old");
  make_export(dest, {"summary.json"}, "new");
  EXPECT_EQ(tree(dest), (std::map<std::string, std::string>{{"summary.json", "new"},
                                                            {kExportListName, tree(dest)[kExportListName]}}));
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"out"});
}

TEST(StagedFolder, AFolderHoldingASummaryJsonAndTheUsersFilesIsRefusedAndKept) {
  // Was: any folder holding a summary.json counted as an earlier export and was replaced whole
  // (a thesis folder came back holding only the export).
  test::TempDir tmp;
  const auto dest = tmp.path() / "work";
  fs::create_directories(dest / "src");
  write(dest / "thesis.tex", "\\documentclass{article}");
  write(dest / "src" / "main.c", "int main(void) { return 0; }");
  write(dest / "summary.json", "{}");
  const auto before = tree(dest);
  const std::string e = refusal(dest);
  EXPECT_NE(e.find("cannot export to " + dest.string()), std::string::npos) << e;
  EXPECT_NE(e.find("not an earlier tilescope export"), std::string::npos) << e;
  EXPECT_EQ(tree(dest), before);
  EXPECT_EQ(names_in(tmp.path()), std::set<std::string>{"work"});
}

TEST(StagedFolder, AnEarlierExportWithAnythingAddedIsRefusedAndKept) {
  test::TempDir tmp;
  const auto dest = tmp.path() / "out";
  make_export(dest, {"summary.json", "a/x.npy"});
  for (const std::string& added : std::vector<std::string>{"notes.txt", "a/notes.txt", "more/"}) {
    SCOPED_TRACE(added);
    if (added.back() == '/') fs::create_directory(dest / added);
    else write(dest / added, "mine");
    const auto before = tree(dest);
    const std::string e = refusal(dest);
    EXPECT_NE(e.find("it holds " + (added.back() == '/' ? added.substr(0, added.size() - 1) : added) +
                     ", which the earlier export there did not write"),
              std::string::npos)
        << e;
    EXPECT_EQ(tree(dest), before);
    fs::remove(dest / added);
  }
  // A listed name that is now the user's folder, or a link, is not the export's file either.
  fs::remove(dest / "summary.json");
  fs::create_directory(dest / "summary.json");
  write(dest / "summary.json" / "keep", "k");
  EXPECT_NE(refusal(dest).find("it holds summary.json"), std::string::npos);
  EXPECT_TRUE(fs::exists(dest / "summary.json" / "keep"));
}

TEST(StagedFolder, AListThatIsDamagedOrReachesOutsideProvesNothing) {
  test::TempDir tmp;
  const auto dest = tmp.path() / "out";
  fs::create_directories(dest);
  write(dest / "thesis.tex", "mine");
  for (const std::string& list :
       {std::string("not json"), std::string("{\"files\": [\"../thesis.tex\"]}"), std::string("{\"files\": [\"/etc/passwd\"]}"),
        std::string("{\"files\": \"thesis.tex\"}"), std::string("{\"files\": [\"./thesis.tex\"]}")}) {
    SCOPED_TRACE(list);
    write(dest / kExportListName, list);
    EXPECT_NE(refusal(dest).find("is damaged"), std::string::npos);
    EXPECT_TRUE(fs::exists(dest / "thesis.tex"));
  }
  fs::remove(dest / kExportListName);
  ASSERT_EQ(::mkfifo((dest / kExportListName).c_str(), 0600), 0);  // refused without blocking
  EXPECT_FALSE(refusal(dest).empty());
  EXPECT_TRUE(fs::exists(dest / "thesis.tex"));
}

TEST(StagedFolder, TheCurrentFolderAndTheFoldersHoldingItAreRefused) {
  // Was: "-o ." and "-o some/sub/.." replaced the folder (a summary.json in it was enough).
  test::TempDir tmp;
  const auto home = tmp.path() / "home";
  fs::create_directories(home / "some" / "sub");
  write(home / "summary.json", "{}");
  write(home / "thesis.tex", "mine");
  const auto before = tree(tmp.path());
  {
    const InFolder in(home);
    for (const char* dest : {".", "./", "some/sub/../..", "some/..", "../home"}) {
      const std::string e = refusal(dest);
      EXPECT_NE(e.find("it is the current folder"), std::string::npos) << dest << ": " << e;
    }
    const InFolder deeper(home / "some" / "sub");
    EXPECT_NE(refusal("../..").find("it is the current folder or holds it"), std::string::npos);
  }
  EXPECT_EQ(tree(tmp.path()), before);
  // Even an earlier export is not replaced while it is the current folder.
  make_export(tmp.path() / "exp", {"summary.json"});
  const InFolder in(tmp.path() / "exp");
  EXPECT_NE(refusal(".").find("it is the current folder"), std::string::npos);
}

TEST(StagedFolder, APathThatIsNotAFolderIsRefusedAndKept) {
  test::TempDir tmp;
  write(tmp.path() / "file", "mine");
  ASSERT_EQ(::mkfifo((tmp.path() / "fifo").c_str(), 0600), 0);
  fs::create_symlink("/dev/null", tmp.path() / "null_link");
  for (const char* name : {"file", "fifo", "null_link"}) {
    const std::string e = refusal(tmp.path() / name);
    EXPECT_NE(e.find("not a folder"), std::string::npos) << name << ": " << e;
  }
  struct stat st {};
  EXPECT_EQ(::lstat((tmp.path() / "fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(names_in(tmp.path()), (std::set<std::string>{"file", "fifo", "null_link"}));
}

TEST(StagedFolder, AnEmptyFolderIsFilled) {
  test::TempDir tmp;
  fs::create_directory(tmp.path() / "empty");
  make_export(tmp.path() / "empty", {"summary.json"});
  EXPECT_EQ(names_in(tmp.path() / "empty"), (std::set<std::string>{"summary.json", kExportListName}));
}

}  // namespace
}  // namespace ts
