// .npy: round trips of every dtype and shape kind with random data, the 64-byte aligned
// header numpy expects, and a clear error for each defect of a damaged or unsupported file.
#include <gtest/gtest.h>

#include "instrumentation/trace/npy.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

const ElemType kNpyTypes[] = {ElemType::BOOL, ElemType::U8,  ElemType::I8,  ElemType::I16,
                              ElemType::U16,  ElemType::I32, ElemType::U32, ElemType::I64,
                              ElemType::U64,  ElemType::F16, ElemType::F32, ElemType::F64};

std::vector<std::byte> random_bytes(std::mt19937_64& rng, size_t n, ElemType type) {
  std::vector<std::byte> b(n);
  for (auto& x : b) x = static_cast<std::byte>(type == ElemType::BOOL ? rng() & 1 : rng());
  return b;
}

TEST(Npy, RoundTripsEveryDtypeAndShapeKind) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {1}, {7}, {3, 5}, {2, 0, 4}, {2, 3, 4, 5}, {1 + static_cast<int64_t>(rng() % 300)}};
  for (ElemType type : kNpyTypes) {
    for (const auto& shape : shapes) {
      SCOPED_TRACE(std::string(to_string(type)) + " " + std::to_string(shape.size()) + "-D");
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      const auto data = random_bytes(rng, static_cast<size_t>(n) * elem_size(type), type);
      const auto path = dir / "a.npy";
      write_npy(path, type, shape, data.data());
      const auto file = test::read_bytes(path);
      EXPECT_EQ(static_cast<char>(file[6]), 1);  // format 1.0
      const size_t data_start = 10 + (std::to_integer<size_t>(file[8]) | std::to_integer<size_t>(file[9]) << 8);
      EXPECT_EQ(data_start % 64, 0u);
      EXPECT_EQ(static_cast<char>(file[data_start - 1]), '\n');
      const NpyArray a = read_npy(path);
      EXPECT_EQ(a.type, type);
      EXPECT_EQ(a.shape, shape);
      EXPECT_EQ(a.bytes, data);
    }
  }
}

TEST(Npy, Bf16HasNoNpyDtype) {
  TempDir dir;
  const uint16_t x[2] = {0x3f80, 0x4000};
  const int64_t shape[1] = {2};
  EXPECT_THROW(write_npy(dir / "b.npy", ElemType::BF16, shape, x), FileWriteError);
  EXPECT_TRUE(dir.entries().empty());
}

std::vector<std::byte> npy_file(const std::string& header, size_t data_bytes, int version = 1) {
  std::string h = header;
  std::vector<std::byte> f;
  const std::string magic = "\x93NUMPY";
  for (char c : magic) f.push_back(static_cast<std::byte>(c));
  f.push_back(static_cast<std::byte>(version));
  f.push_back(std::byte{0});
  const size_t len_bytes = version == 1 ? 2 : 4;
  for (size_t i = 0; i < len_bytes; ++i) f.push_back(static_cast<std::byte>(h.size() >> (8 * i)));
  for (char c : h) f.push_back(static_cast<std::byte>(c));
  for (size_t i = 0; i < data_bytes; ++i) f.push_back(static_cast<std::byte>(i * 13 + 1));
  return f;
}

void expect_npy_rejected(const TempDir& dir, const std::vector<std::byte>& bytes,
                         const std::string& what) {
  SCOPED_TRACE("expecting: " + what);
  const auto path = dir / "bad.npy";
  test::write_bytes(path, bytes);
  try {
    read_npy(path);
    ADD_FAILURE() << "accepted";
  } catch (const NpyFormatError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(NpyMalformed, EachDefectHasItsError) {
  TempDir dir;
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";
  // the valid baseline
  test::write_bytes(dir / "ok.npy", npy_file(ok, 24));
  EXPECT_EQ(read_npy(dir / "ok.npy").shape, (std::vector<int64_t>{2, 3}));

  expect_npy_rejected(dir, {}, "not a .npy file");
  expect_npy_rejected(dir, npy_file(ok, 24, 4), "version 4.0 is not supported");
  auto cut = npy_file(ok, 24);
  cut.resize(30);
  expect_npy_rejected(dir, cut, "goes past the end of the file");
  cut = npy_file(ok, 20);
  expect_npy_rejected(dir, cut, "data hold 20 bytes but dtype <f4 and the shape need 24");
  expect_npy_rejected(dir, npy_file(ok, 28), "4 unexpected bytes after the data");
  expect_npy_rejected(dir, npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24),
                      "big-endian");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24),
                      "Fortran order");
  expect_npy_rejected(dir, npy_file("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24),
                      "unsupported dtype '<c8'");
  expect_npy_rejected(dir, npy_file("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 12),
                      "structured dtypes");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'shape': (3,), }", 12), "lacks 'fortran_order'");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12),
                      "'descr' appears twice");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", 12),
                      "tuple of non-negative integers");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3 }", 12),
                      "expected ',' or ')' in 'shape'");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'fortran_order': False 'shape': (3,)}", 12),
                      "expected ',' or '}'");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }", 12),
                      "not True or False");
  expect_npy_rejected(dir, npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0),
                      "overflows");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 0),
                      "too large");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", 12),
                      "unexpected key 'x'");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk", 12),
                      "unexpected text after");
  expect_npy_rejected(dir, npy_file("{'descr': '<f4", 12), "unterminated string");
}

}  // namespace
}  // namespace ts
