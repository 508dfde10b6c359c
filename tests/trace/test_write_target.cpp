// Where the programs may write (write_target.h): an existing path must be a regular file (or a
// folder where a folder is written); devices, FIFOs and links to them are refused and left as
// they were; a link to a regular file writes that file and stays a link; an output that is one
// of the inputs is refused however it is named. AtomicFileWriter applies the rule when it opens
// and again before it renames, and stops cleanly when writes are cancelled.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "instrumentation/trace/atomic_file.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/write_target.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

std::string write_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const FileWriteError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  AtomicFileWriter out(path);
  out.write(text.data(), text.size());
  out.commit();
}

mode_t type_of(const std::filesystem::path& path) {
  struct stat st {};
  ::lstat(path.c_str(), &st);
  return st.st_mode & S_IFMT;
}

TEST(WriteTarget, DevicesFifosAndLinksToThemAreRefusedAndKept) {
  // Was: the temporary file was renamed over them (-o /dev/full exited 0 with /dev/full gone).
  TempDir dir;
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/null", dir / "null_link");
  std::filesystem::create_symlink(fifo, dir / "fifo_link");
  const std::pair<std::filesystem::path, std::string> cases[] = {
      {fifo, "it is a FIFO (named pipe), not a regular file"},
      {dir / "null_link", "it is a symbolic link to a character device, not a regular file"},
      {dir / "fifo_link", "it is a symbolic link to a FIFO (named pipe)"}};
  // (Never /dev/null itself: a writer without this check, run as root, would replace it.)
  for (const auto& c : cases) {
    const std::filesystem::path& path = c.first;  // (clang 14: no lambda capture of a binding)
    const std::string& what = c.second;
    SCOPED_TRACE(path.string());
    const mode_t before = type_of(path);
    std::string e = write_error([&] { write_file(path, "data"); });
    EXPECT_NE(e.find(what), std::string::npos) << e;
    EXPECT_NE(e.find("cannot write " + path.string()), std::string::npos) << e;
    e = write_error([&] { check_output_file(path, "out.txt"); });
    EXPECT_NE(e.find(what), std::string::npos) << e;
    EXPECT_EQ(type_of(path), before);
  }
  EXPECT_EQ(type_of("/dev/null"), S_IFCHR);
  EXPECT_EQ(dir.entries().size(), 3u) << "no temporary file left";
}

TEST(WriteTarget, FoldersAndFilesWhereTheOtherIsWanted) {
  TempDir dir;
  std::filesystem::create_directory(dir / "folder");
  test::write_bytes(dir / "file", "x", 1);
  // The suggested name is what the caller writes, or none: a screenshot is not a trace.
  std::string e = write_error([&] { check_write_target(dir / "folder", WriteTarget::file); });
  EXPECT_NE(e.find("it is a folder, not a regular file; give a file name in it"), std::string::npos) << e;
  EXPECT_EQ(e.find("e.g."), std::string::npos) << e;
  e = write_error([&] { check_output_file(dir / "folder", "screenshot.png"); });
  EXPECT_NE(e.find("give a file name in it, e.g. " + (dir / "folder" / "screenshot.png").string()), std::string::npos) << e;
  EXPECT_EQ(e.find(".safetensors"), std::string::npos) << e;
  e = write_error([&] { check_write_target(dir / "file", WriteTarget::folder); });
  EXPECT_NE(e.find("it is a regular file, not a folder"), std::string::npos) << e;
  check_write_target(dir / "folder", WriteTarget::folder);
  check_write_target(dir / "file", WriteTarget::file);
  check_write_target(dir / "missing", WriteTarget::file);
  std::filesystem::create_symlink(dir / "nowhere", dir / "dangling");
  e = write_error([&] { check_write_target(dir / "dangling", WriteTarget::file); });
  EXPECT_NE(e.find("symbolic link to nothing"), std::string::npos) << e;
}

TEST(WriteTarget, ALinkToARegularFileWritesTheFileAndStaysALink) {
  TempDir dir;
  std::filesystem::create_directory(dir / "real");
  test::write_bytes(dir / "real/target.txt", "old", 3);
  std::filesystem::create_symlink(dir / "real/target.txt", dir / "link.txt");
  write_file(dir / "link.txt", "new contents");
  EXPECT_EQ(type_of(dir / "link.txt"), S_IFLNK);
  const auto bytes = test::read_bytes(dir / "real/target.txt");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "new contents");
}

TEST(WriteTarget, AnOutputThatIsAnInputIsRefusedHoweverItIsNamed) {
  TempDir dir;
  test::write_bytes(dir / "x.safetensors", "input", 5);
  std::filesystem::create_symlink(dir / "x.safetensors", dir / "sym");
  std::filesystem::create_hard_link(dir / "x.safetensors", dir / "hard");
  const std::vector<std::filesystem::path> inputs{dir / "other.npy", dir / "x.safetensors"};
  for (const std::filesystem::path& out :
       {dir / "x.safetensors", dir / "sym", dir / "hard", dir.path() / "." / "x.safetensors"}) {
    const std::string e = write_error([&] { check_not_an_input(out, inputs, "an input file of this capture"); });
    EXPECT_NE(e.find("it is an input file of this capture"), std::string::npos) << e;
  }
  check_not_an_input(dir / "new.trace", inputs, "an input");
  test::write_bytes(dir / "unrelated", "u", 1);
  check_not_an_input(dir / "unrelated", inputs, "an input");
}

TEST(WriteTarget, AFifoPutInPlaceDuringTheWriteIsNotReplaced) {
  TempDir dir;
  const auto path = dir / "out.bin";
  AtomicFileWriter out(path);
  out.write("data", 4);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);  // appeared while the bytes were written
  const std::string e = write_error([&] { out.commit(); });
  EXPECT_NE(e.find("FIFO"), std::string::npos) << e;
  EXPECT_EQ(type_of(path), S_IFIFO);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
}

TEST(CancelWrites, ACancelledWriteLeavesTheOldFileAndNoTemporaryFile) {
  TempDir dir;
  const auto path = dir / "out.bin";
  write_file(path, "previous");
  std::atomic<bool> cancel{false};
  const CancelWrites scope(&cancel);
  {
    AtomicFileWriter out(path);
    out.write("new", 3);
    cancel = true;
    EXPECT_THROW(out.commit(), WriteCancelled);
  }
  {
    AtomicFileWriter out(path);
    EXPECT_THROW(out.write("more", 4), WriteCancelled);
  }
  EXPECT_THROW(throw_if_writes_cancelled(path), WriteCancelled);
  const auto bytes = test::read_bytes(path);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "previous");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
}

}  // namespace
}  // namespace ts
