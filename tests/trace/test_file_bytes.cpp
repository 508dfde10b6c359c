// The readers own what they read (file_bytes.h): a trace truncated or rewritten by another
// program after it was opened changes nothing a reader checked (it used to be mapped: SIGBUS
// on the next access, or values changing under the checks); a file that changes while it is
// read is a clear error; special files are refused without blocking or reading forever; small
// files are read with a cap; tensor inputs are checked by their header before the data are read.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/tensor_files.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

template <typename E, typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

// A safetensors file of two float tensors with random values, large enough to span many pages.
std::vector<float> write_floats_file(const std::filesystem::path& path, std::mt19937_64& rng) {
  std::vector<float> values((size_t{1} << 20) + rng() % 1000);
  std::normal_distribution<float> normal;
  for (float& v : values) v = normal(rng);
  const std::vector<float> small(17, 3.0f);
  write_safetensors(path,
                    std::vector<TensorToWrite>{{"big", ElemType::F32, {static_cast<int64_t>(values.size())}, values.data()},
                                               {"small", ElemType::F32, {17}, small.data()}},
                    {{"note", "x"}});
  return values;
}

TEST(FileBytes, ATraceTruncatedAfterOpeningStaysReadable) {
  // Was: the file was mapped, and the first access past the new end raised SIGBUS.
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  const auto path = dir / "t.safetensors";
  const std::vector<float> values = write_floats_file(path, rng);
  const SafetensorsFile file = SafetensorsFile::open(path);
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  const TensorView<float> big = file.view<float>("big");
  ASSERT_EQ(big.size(), values.size());
  EXPECT_EQ(std::memcmp(big.data(), values.data(), values.size() * sizeof(float)), 0);
}

TEST(FileBytes, ATraceRewrittenInPlaceKeepsTheValuesThatWereChecked) {
  // Was: a rewrite in place (cp over it, another capture) changed the mapped values after the
  // reader had checked them.
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  const auto path = dir / "t.safetensors";
  const std::vector<float> values = write_floats_file(path, rng);
  const SafetensorsFile file = SafetensorsFile::open(path);
  const uint64_t size = file.file_size();
  std::vector<std::byte> garbage(size);
  for (auto& b : garbage) b = static_cast<std::byte>(rng());
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, garbage.data(), garbage.size(), 0), static_cast<ssize_t>(garbage.size()));
  ::close(fd);
  const TensorView<float> big = file.view<float>("big");
  EXPECT_EQ(std::memcmp(big.data(), values.data(), values.size() * sizeof(float)), 0);
  EXPECT_EQ(file.metadata().at("note"), "x");
}

// A safetensors file whose header (`json`) is followed by `data_bytes` of sparse data.
void write_sparse_safetensors(const std::filesystem::path& path, const std::string& json, uint64_t data_bytes) {
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i) head[static_cast<size_t>(i)] = static_cast<char>((uint64_t{json.size()} >> (8 * i)) & 0xff);
  head += json;
  test::write_bytes(path, head.data(), head.size());
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(head.size() + data_bytes)), 0);
}

// What SafetensorsFile::open(path) throws, run in a child process that may not reserve more than
// 2 GiB of address space (outside AddressSanitizer, which reserves terabytes of shadow).
std::string open_error_within_2_gib(const std::filesystem::path& path) {
  int fds[2];
  if (::pipe(fds) != 0) return "no pipe";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
#if !defined(__SANITIZE_ADDRESS__)
    const rlimit limit{rlim_t{2} << 30, rlim_t{2} << 30};
    ::setrlimit(RLIMIT_AS, &limit);
#endif
    std::string what = "opened";
    try {
      SafetensorsFile::open(path);
    } catch (const FileError& e) {
      what = e.what();
    } catch (const std::exception& e) {
      what = std::string("other error: ") + e.what();
    }
    ssize_t ignored = ::write(fds[1], what.data(), what.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[1024];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) : out;
}

TEST(FileBytes, ADamagedHeaderIsRefusedBeforeTheDataAreRead) {
  // 8 GiB of (sparse) data behind a header whose tensor does not cover them: refused from the
  // header, in a process that could not even hold the data.
  TempDir dir;
  const auto path = dir / "bad.safetensors";
  write_sparse_safetensors(path, R"({"t": {"dtype": "U8", "shape": [16], "data_offsets": [0, 16]}})", uint64_t{8} << 30);
  const std::string e = open_error_within_2_gib(path);
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
  EXPECT_NE(e.find("belong to no tensor"), std::string::npos) << e;
}

TEST(FileBytes, AFileLargerThanTheMemoryAvailableIsRefusedWithItsSize) {
  TempDir dir;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const uint64_t twice_the_memory = 2 * static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  const auto path = dir / "huge.safetensors";
  write_sparse_safetensors(path,
                           R"({"t": {"dtype": "U8", "shape": [)" + std::to_string(twice_the_memory) +
                               R"(], "data_offsets": [0, )" + std::to_string(twice_the_memory) + "]}}",
                           twice_the_memory);
  const std::string e = error_of<FileReadError>([&] { SafetensorsFile::open(path); });
  EXPECT_NE(e.find("more than the memory available to read it into"), std::string::npos) << e;
}

TEST(FileBytes, AFileThatShrinksOrChangesWhileItIsReadIsAClearError) {
  TempDir dir;
  const auto path = dir / "f.bin";
  const std::vector<std::byte> bytes(100000, std::byte{7});
  test::write_bytes(path, bytes);
  {
    const InputFile file(path);
    ASSERT_EQ(::truncate(path.c_str(), 5000), 0);  // another program cut it mid-read
    std::vector<std::byte> into(bytes.size());
    const std::string e = error_of<FileReadError>([&] { file.read_at(0, into.data(), into.size()); });
    EXPECT_NE(e.find("the file changed while it was read"), std::string::npos) << e;
    EXPECT_NE(e.find(path.string()), std::string::npos) << e;
  }
  test::write_bytes(path, bytes);
  {
    const InputFile file(path);
    std::vector<std::byte> into(bytes.size());
    file.read_at(0, into.data(), into.size());
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
    ASSERT_EQ(::write(fd, "more", 4), 4);  // grew after the read
    ::close(fd);
    const std::string e = error_of<FileReadError>([&] { file.check_unchanged(); });
    EXPECT_NE(e.find("the file changed while it was read"), std::string::npos) << e;
  }
  {
    const InputFile file(path);
    timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};  // rewritten in place: same size, new time
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    EXPECT_THROW(file.check_unchanged(), FileReadError);
  }
}

TEST(FileBytes, SpecialFilesAreRefusedWithoutBlockingOrReadingForever) {
  TempDir dir;
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::pair<std::filesystem::path, std::string> cases[] = {
      {fifo, "it is a FIFO (named pipe), not a regular file"},
      {"/dev/zero", "it is a character device, not a regular file"},
      {dir.path(), "it is a folder, not a regular file"}};
  for (const auto& c : cases) {
    const std::filesystem::path& path = c.first;  // (clang 14: no lambda capture of a binding)
    const std::string& what = c.second;
    const std::string e = error_of<FileReadError>([&] { FileBytes::read(path); });
    EXPECT_NE(e.find(what), std::string::npos) << e;
    EXPECT_THROW(read_small_file(path, 1 << 20), FileReadError) << path;
    EXPECT_THROW(InputFile{path}, FileReadError) << path;
  }
}

TEST(FileBytes, ReadsWholeFilesAlignedAndSmallFilesWithACap) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  std::vector<std::byte> bytes(3 * 4096 + rng() % 4096);
  for (auto& b : bytes) b = static_cast<std::byte>(rng());
  test::write_bytes(dir / "f.bin", bytes);
  const auto read = FileBytes::read(dir / "f.bin");
  ASSERT_EQ(read->bytes().size(), bytes.size());
  EXPECT_EQ(std::memcmp(read->bytes().data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(read->bytes().data()) % 64, 0u);
  EXPECT_TRUE(FileBytes::read(dir / "f.bin", bytes.size())->bytes().size() == bytes.size());
  const std::string e = error_of<FileReadError>([&] { FileBytes::read(dir / "f.bin", bytes.size() - 1); });
  EXPECT_NE(e.find("more than the " + std::to_string(bytes.size() - 1)), std::string::npos) << e;
  test::write_bytes(dir / "empty", "", 0);
  EXPECT_TRUE(FileBytes::read(dir / "empty")->bytes().empty());
  test::write_bytes(dir / "small.json", "{\"a\": 1}", 8);
  EXPECT_EQ(read_small_file(dir / "small.json", 8), "{\"a\": 1}");
  EXPECT_THROW(read_small_file(dir / "small.json", 7), FileReadError);
  const std::string missing = error_of<FileReadError>([&] { FileBytes::read(dir / "none"); });
  EXPECT_NE(missing.find("No such file"), std::string::npos) << missing;
}

// A .npy of float32 `shape` whose data are a hole (a sparse file): as large as the shape says,
// nothing stored.
void write_npy_header(const std::filesystem::path& path, const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string head("\x93NUMPY\x01\x00", 8);
  head += static_cast<char>(dict.size() & 0xff);
  head += static_cast<char>(dict.size() >> 8);
  head += dict;
  test::write_bytes(path, head.data(), head.size());
  uint64_t data = 4;
  for (int64_t d : shape) data *= static_cast<uint64_t>(d);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(head.size() + data)), 0);  // sparse
}

TEST(TensorFile, AHugeNpyIsDescribedByItsHeaderWithoutReadingItsData) {
  // 8 GiB of sparse data: opening reads the header only, so this is instant and costs nothing.
  TempDir dir;
  const auto path = dir / "q.npy";
  write_npy_header(path, {1, 1, int64_t{1} << 25, 64});
  const TensorFile file(path);
  ASSERT_TRUE(file.is_npy());
  const TensorInfo& t = file.select({});
  EXPECT_EQ(t.shape, (std::vector<int64_t>{1, 1, int64_t{1} << 25, 64}));
  EXPECT_EQ(t.size_bytes(), uint64_t{8} << 30);
  EXPECT_EQ(file.kernel_dtype(t), DType::f32);
}

TEST(TensorFile, ReadsAndHashesInOnePassAndNoticesAChangedFile) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  std::vector<float> a(1000), b(333), c(77);
  for (auto* v : {&a, &b, &c})
    for (float& x : *v) x = static_cast<float>(rng() % 1000);
  const auto path = dir / "qkv.safetensors";
  write_safetensors(path,
                    std::vector<TensorToWrite>{{"q", ElemType::F32, {1000}, a.data()},
                                               {"skip", ElemType::F32, {333}, b.data()},
                                               {"v", ElemType::F32, {77}, c.data()}},
                    {});
  const TensorFile file(path);
  const TensorInfo* wanted[] = {&file.select("v"), &file.select("q")};
  const TensorFile::Contents got = file.read(wanted);
  ASSERT_EQ(got.tensors.size(), 2u);
  EXPECT_EQ(std::memcmp(got.tensors[0].bytes.data(), c.data(), c.size() * 4), 0);
  EXPECT_EQ(std::memcmp(got.tensors[1].bytes.data(), a.data(), a.size() * 4), 0);
  EXPECT_EQ(got.sha256, sha256_file(path));  // of the whole file, the unread tensor included
  ASSERT_EQ(::truncate(path.c_str(), 100), 0);
  const std::string e = error_of<FileReadError>([&] { file.read(wanted); });
  EXPECT_NE(e.find("the file changed while it was read"), std::string::npos) << e;
}

TEST(TensorFile, OverlongNpyHeaderIsRefused) {
  TempDir dir;
  std::string head("\x93NUMPY\x02\x00", 8);
  const uint32_t length = 1u << 30;
  for (int i = 0; i < 4; ++i) head += static_cast<char>((length >> (8 * i)) & 0xff);
  test::write_bytes(dir / "h.npy", head.data(), head.size());
  ASSERT_EQ(::truncate((dir / "h.npy").c_str(), (off_t{1} << 30) + 64), 0);
  const std::string e = error_of<NpyFormatError>([&] { TensorFile{dir / "h.npy"}; });
  EXPECT_NE(e.find("over the limit"), std::string::npos) << e;
}

}  // namespace
}  // namespace ts
