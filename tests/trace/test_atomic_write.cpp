// Writes are atomic: a folder that cannot be written (missing, a file, one that refuses new
// files even to root) gives a clear error and no file; a write
// that fails midway (a file-size limit standing in for a full disk) leaves neither a temporary
// file nor a damaged destination; an existing file survives a failed overwrite.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "instrumentation/trace/atomic_file.h"
#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/trace_file.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

// n random events with the attention description they fit.
struct SomeTrace {
  AttentionSpec spec;
  CapturedEvents events;
  TraceContents contents() const { return {.events = &events, .attention = spec}; }
};
SomeTrace some_events(size_t n) {
  std::mt19937_64 rng(test::run_seed());
  SomeTrace t;
  t.events = test::random_events(rng, n, 64, 128, &t.spec);
  return t;
}

template <typename Fn>
void expect_write_error(Fn&& write, const std::filesystem::path& path, const std::string& what) {
  SCOPED_TRACE(what);
  try {
    write();
    ADD_FAILURE() << "write succeeded";
  } catch (const FileWriteError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(AtomicWrite, MissingFolderGivesAClearErrorAndNoFile) {
  TempDir dir;
  const SomeTrace ev = some_events(3);
  const auto path = dir / "no/such/folder/run.trace.safetensors";
  expect_write_error([&] { write_trace(path, ev.contents()); }, path,
                     "No such file or directory");
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicWrite, ParentIsAFileGivesAClearError) {
  TempDir dir;
  test::write_bytes(dir / "plain", "x", 1);
  const float x[2] = {1, 2};
  const int64_t shape[1] = {2};
  const auto path = dir / "plain/a.npy";
  expect_write_error([&] { write_npy(path, ElemType::F32, shape, x); }, path, "Not a directory");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"plain"});
}

// A folder no user may create files in, root included: sysfs has no file creation (the
// kernel refuses it with EACCES, or EROFS where /sys is mounted read-only, as in many
// containers). Folder permissions would not do: root ignores them.
TEST(AtomicWrite, FolderThatRefusesFilesGivesAClearErrorAndNoFile) {
  const std::filesystem::path folder = "/sys/kernel";
  ASSERT_TRUE(std::filesystem::is_directory(folder)) << "this test needs Linux's sysfs at /sys";
  const std::string name = "tilescope-atomic-write-" + std::to_string(::getpid()) + ".trace.safetensors";
  const SomeTrace ev = some_events(3);
  const auto path = folder / name;
  try {
    write_trace(path, ev.contents());
    ADD_FAILURE() << "write succeeded";
  } catch (const FileWriteError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_TRUE(what.find(std::strerror(EACCES)) != std::string::npos ||
                what.find(std::strerror(EROFS)) != std::string::npos)
        << what;
  }
  // Neither the file nor a temporary file of it was left.
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    EXPECT_EQ(entry.path().filename().string().rfind(name, 0), std::string::npos) << entry.path();
}

// RLIMIT_FSIZE makes write() fail with EFBIG part-way through, as a full disk would (ENOSPC).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);  // else the kernel kills the process
    ::getrlimit(RLIMIT_FSIZE, &old_);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  sighandler_t old_handler_;
};

TEST(AtomicWrite, FailedWriteLeavesNoTempFileAndKeepsTheOldFile) {
  TS_SEED_TRACE();
  TempDir dir;
  const auto path = dir / "run.trace.safetensors";
  const SomeTrace small = some_events(2);
  write_trace(path, small.contents());
  const auto before = test::read_bytes(path);

  // The limit is half of what the big trace takes (its size depends on the random events' row
  // counts: payloads are stored up to the most rows of any event), so the write fails part-way.
  const SomeTrace big = some_events(64);
  const auto sized = dir / "sized.trace.safetensors";
  write_trace(sized, big.contents());
  const auto big_bytes = std::filesystem::file_size(sized);
  std::filesystem::remove(sized);
  ASSERT_GT(big_bytes, 2 * test::read_bytes(path).size()) << "the big trace must be larger than the small one";
  {
    FileSizeLimit limit(static_cast<rlim_t>(big_bytes / 2));
    expect_write_error([&] { write_trace(path, big.contents()); }, path, "File too large");
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"run.trace.safetensors"});
  EXPECT_EQ(test::read_bytes(path), before);
  const TraceFile t = TraceFile::open(path);  // still the old, valid trace
  EXPECT_EQ(t.num_events(), 2u);

  {
    FileSizeLimit limit(4096);
    std::vector<float> data(100000, 1.0f);
    const int64_t shape[1] = {100000};
    const auto npy = dir / "a.npy";
    expect_write_error([&] { write_npy(npy, ElemType::F32, shape, data.data()); }, npy,
                       "File too large");
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"run.trace.safetensors"});
}

TEST(AtomicWrite, DestinationThatIsAFolderIsRefusedWithoutLeftovers) {
  TempDir dir;
  std::filesystem::create_directory(dir / "target");
  test::write_bytes(dir / "target/keep", "k", 1);
  const SomeTrace ev = some_events(2);
  const auto path = dir / "target";
  expect_write_error([&] { write_trace(path, ev.contents()); }, path, "it is a folder, not a regular file");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"target"});
}

TEST(AtomicWrite, UncommittedWriterRemovesItsTempFile) {
  TempDir dir;
  {
    AtomicFileWriter w(dir / "x.bin");
    w.write("hello", 5);
    EXPECT_TRUE(std::filesystem::exists(w.temp_path()));
    EXPECT_EQ(w.temp_path().parent_path(), dir.path());
  }
  EXPECT_TRUE(dir.entries().empty());
  {
    AtomicFileWriter w(dir / "x.bin");
    w.write("hello", 5);
    w.commit();
  }
  EXPECT_EQ(test::read_bytes(dir / "x.bin").size(), 5u);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"x.bin"});
}

TEST(AtomicWrite, LongFileNameStillWrites) {
  TempDir dir;
  const std::string name = std::string(240, 'n') + ".npy";  // a temp name must stay < 256
  const float x[3] = {1.5f, -2.0f, 3.25f};
  const int64_t shape[1] = {3};
  write_npy(dir / name, ElemType::F32, shape, x);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{name});
  EXPECT_EQ(read_npy(dir / name).bytes.size(), 12u);
}

}  // namespace
}  // namespace ts
