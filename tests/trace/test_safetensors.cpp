// The general safetensors layer: round trips of every dtype with random data, and a reader
// that turns every kind of malformed file (made here by corrupting valid ones) into a
// TraceFormatError naming the file and the problem.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/safetensors.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

struct OwnedTensor {
  std::string name;
  ElemType type;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

OwnedTensor random_tensor(std::mt19937_64& rng, std::string name, ElemType type,
                          std::vector<int64_t> shape) {
  OwnedTensor t{std::move(name), type, std::move(shape), {}};
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  t.bytes.resize(static_cast<size_t>(n) * elem_size(type));
  for (auto& b : t.bytes) b = static_cast<std::byte>(rng());
  if (type == ElemType::BOOL)
    for (auto& b : t.bytes) b = static_cast<std::byte>(static_cast<uint8_t>(b) & 1);
  return t;
}

std::vector<TensorToWrite> to_write(const std::vector<OwnedTensor>& ts) {
  std::vector<TensorToWrite> out;
  for (const auto& t : ts) out.push_back({t.name, t.type, t.shape, t.bytes.data()});
  return out;
}

TEST(Safetensors, RoundTripsEveryDtypeShapeAndMetadataKey) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  const ElemType types[] = {ElemType::BOOL, ElemType::U8,  ElemType::I8,   ElemType::I16,
                            ElemType::U16,  ElemType::I32, ElemType::U32,  ElemType::I64,
                            ElemType::U64,  ElemType::F16, ElemType::BF16, ElemType::F32,
                            ElemType::F64};
  std::vector<OwnedTensor> tensors;
  for (ElemType t : types) {
    // Odd sizes so that naive packing would misalign the wider types after the narrow ones.
    std::vector<int64_t> shape;
    const int rank = static_cast<int>(rng() % 4);
    for (int r = 0; r < rank; ++r) shape.push_back(1 + static_cast<int64_t>(rng() % 7));
    tensors.push_back(random_tensor(rng, "t." + std::string(to_string(t)), t, shape));
  }
  tensors.push_back(random_tensor(rng, "empty", ElemType::F32, {3, 0, 5}));
  tensors.push_back(random_tensor(rng, "unicode \xc3\xa9\xe2\x82\xac", ElemType::I32, {2}));
  std::map<std::string, std::string> meta;
  for (int i = 0; i < 20; ++i) meta["key" + std::to_string(rng() % 100000)] = std::to_string(rng());
  meta["json"] = R"({"a": [1, 2, "x\"y"], "b": null})";
  meta["empty"] = "";

  const auto path = dir / "all.safetensors";
  write_safetensors(path, to_write(tensors), meta);
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata(), meta);
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (const OwnedTensor& t : tensors) {
    SCOPED_TRACE(t.name);
    const TensorInfo& info = f.at(t.name);
    EXPECT_EQ(info.type, t.type);
    EXPECT_EQ(info.shape, t.shape);
    const auto b = f.bytes(info);
    ASSERT_EQ(b.size(), t.bytes.size());
    EXPECT_TRUE(test::same_bits(b.data(), t.bytes.data(), b.size()));
    // The writer orders tensors so that every view is aligned: zero-copy.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % elem_size(t.type), 0u);
  }
  const TensorView<double> d = f.view<double>("t.F64");
  EXPECT_FALSE(d.is_copy());
  EXPECT_TRUE(test::same_bits(d.data(), f.bytes(f.at("t.F64")).data(), d.size() * 8));
  EXPECT_THROW(f.view<float>("t.F64"), TraceFormatError);
  EXPECT_THROW(f.at("nope"), TraceFormatError);
}

TEST(Safetensors, HeaderIsPaddedSoTheDataStartIs8Aligned) {
  TempDir dir;
  for (int len = 1; len < 20; ++len) {
    std::vector<uint8_t> data(static_cast<size_t>(len), 7);
    write_safetensors(dir / "p.safetensors",
                      std::vector<TensorToWrite>{{std::string(static_cast<size_t>(len), 'n'),
                                                  ElemType::U8, {len}, data.data()}},
                      {});
    const auto bytes = test::read_bytes(dir / "p.safetensors");
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u);
    EXPECT_EQ(static_cast<char>(bytes[8]), '{');
  }
}

// A misaligned tensor in a foreign file is copied, not read through a misaligned pointer.
TEST(Safetensors, MisalignedTensorIsCopied) {
  TempDir dir;
  std::string header =
      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  header.append((4 - header.size() % 4) % 4, ' ');  // the buffer 4-aligned, so 'b' at 1 mod 4
  std::vector<std::byte> file(8 + header.size() + 9);
  const uint64_t n = header.size();
  std::memcpy(file.data(), &n, 8);
  std::memcpy(file.data() + 8, header.data(), header.size());
  const float values[2] = {1.5f, -2.25f};
  std::memcpy(file.data() + 8 + header.size() + 1, values, 8);
  test::write_bytes(dir / "m.safetensors", file);
  const SafetensorsFile f = SafetensorsFile::open(dir / "m.safetensors");
  const TensorView<float> v = f.view<float>("b");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[1], -2.25f);
  EXPECT_NE(reinterpret_cast<uintptr_t>(f.bytes(f.at("b")).data()) % 4, 0u);
  EXPECT_TRUE(v.is_copy());
}

// ---- malformed files ----------------------------------------------------------------------

std::vector<std::byte> file_with_header(const std::string& header, size_t buffer_size,
                                        uint64_t claimed_length = UINT64_MAX) {
  std::vector<std::byte> file(8 + header.size() + buffer_size);
  const uint64_t n = claimed_length == UINT64_MAX ? header.size() : claimed_length;
  std::memcpy(file.data(), &n, 8);
  std::memcpy(file.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < buffer_size; ++i) file[8 + header.size() + i] = std::byte(i * 37 + 11);
  return file;
}

// Writes `bytes`, opens them, and expects a TraceFormatError naming the file and `what`.
void expect_rejected(const TempDir& dir, const std::vector<std::byte>& bytes,
                     const std::string& what) {
  SCOPED_TRACE("expecting: " + what);
  const auto path = dir / "bad.safetensors";
  test::write_bytes(path, bytes);
  try {
    SafetensorsFile::open(path);
    ADD_FAILURE() << "accepted a malformed file";
  } catch (const TraceFormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_EQ(e.path(), path);
  }
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

TEST(SafetensorsMalformed, TruncatedFiles) {
  TempDir dir;
  std::vector<float> data(100, 1.25f);
  write_safetensors(dir / "ok.safetensors",
                    std::vector<TensorToWrite>{{"x", ElemType::F32, {10, 10}, data.data()}}, {});
  const auto good = test::read_bytes(dir / "ok.safetensors");
  ASSERT_NO_THROW(SafetensorsFile::open(dir / "ok.safetensors"));
  auto cut = good;
  cut.resize(good.size() - 4);
  expect_rejected(dir, cut, "go past the end of the data buffer");
  cut.resize(20);
  expect_rejected(dir, cut, "goes past the end");
  cut.resize(5);
  expect_rejected(dir, cut, "too short");
  expect_rejected(dir, {}, "too short");
}

TEST(SafetensorsMalformed, HeaderLength) {
  TempDir dir;
  const std::string h = "{" + entry("a", "U8", "[4]", "[0,4]") + "}";
  expect_rejected(dir, file_with_header(h, 4, h.size() + 5), "goes past the end");
  expect_rejected(dir, file_with_header(h, 4, uint64_t{1} << 62), "exceeds the limit");
  expect_rejected(dir, file_with_header(h, 4, UINT64_MAX - 1), "exceeds the limit");
  expect_rejected(dir, file_with_header(h, 4, 0), "does not start with '{'");
}

TEST(SafetensorsMalformed, BadJson) {
  TempDir dir;
  expect_rejected(dir, file_with_header("{\"a\":", 0), "not valid JSON");
  expect_rejected(dir, file_with_header("{\"a\":{}} trailing", 0), "not valid JSON");
  expect_rejected(dir, file_with_header("[1,2]", 0), "does not start with '{'");
  expect_rejected(dir, file_with_header(" {}", 0), "does not start with '{'");
  expect_rejected(dir, file_with_header("{\"a\":1}", 0), "entry 'a' is a number, not an object");
  expect_rejected(dir, file_with_header("{\"a\":[[[[[[[[[[]]]]]]]]]]}", 0), "is a list");
  expect_rejected(dir, file_with_header("{\"\xff\xfe\":{}}", 0), "not valid JSON");  // bad UTF-8
  expect_rejected(dir, file_with_header("{\"\\ud800\":{}}", 0), "not valid JSON");  // lone surrogate
  expect_rejected(dir, file_with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],"
                                        "\"extra\":1}}", 1), "unknown field 'extra'");
}

TEST(SafetensorsMalformed, DtypesShapesAndOffsets) {
  TempDir dir;
  const auto one = [&](const std::string& e, size_t buffer, const std::string& what) {
    expect_rejected(dir, file_with_header("{" + e + "}", buffer), what);
  };
  one(entry("a", "F7", "[2]", "[0,8]"), 8, "unknown or unsupported dtype 'F7'");
  one(entry("a", "F32", "[3]", "[0,8]"), 8, "span 8 bytes, but dtype F32 and shape [3] need 12");
  one(entry("a", "F32", "[-2]", "[0,8]"), 8, "negative");
  one(entry("a", "F32", "[2.5]", "[0,8]"), 8, "non-integer");
  one(entry("a", "F32", "[\"2\"]", "[0,8]"), 8, "holds a string");
  one(entry("a", "U8", "[4294967296, 4294967296]", "[0,8]"), 8, "overflows");
  one(entry("a", "F64", "[2305843009213693952]", "[0,8]"), 8, "overflows");
  one(entry("a", "U8", "[99999999999999999999]", "[0,8]"), 8, "non-integer number");
  one(entry("a", "U8", "[8]", "[0,8,9]"), 8, "more than 2 numbers");
  one(entry("a", "U8", "[8]", "[0]"), 8, "holds 1 numbers");
  one(entry("a", "U8", "[8]", "[0,16]"), 8, "go past the end of the data buffer");
  one(entry("a", "U8", "[0]", "[9,8]"), 8, "begin is after end");
  one("\"a\":{\"dtype\":\"U8\",\"shape\":[8]}", 8, "missing field 'data_offsets'");
  one("\"a\":{\"shape\":[8],\"data_offsets\":[0,8]}", 8, "missing field 'dtype'");
  one("\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,8]}", 8, "missing field 'shape'");
  one("\"a\":{\"dtype\":8,\"shape\":[8],\"data_offsets\":[0,8]}", 8, "field 'dtype' is a number");
  one(entry("a", "U8", std::string(200, '['), "[0,8]"), 8, "holds a list");
  std::string rank70 = "[";
  for (int i = 0; i < 70; ++i) rank70 += i ? ",1" : "1";
  one(entry("a", "U8", rank70 + "]", "[0,1]"), 1, "more than 64 dimensions");
}

TEST(SafetensorsMalformed, OverlapsAndHoles) {
  TempDir dir;
  const auto two = [&](const std::string& off_a, const std::string& off_b, size_t buffer,
                       const std::string& what) {
    expect_rejected(dir,
                    file_with_header("{" + entry("a", "U8", "[4]", off_a) + "," +
                                         entry("b", "U8", "[4]", off_b) + "}",
                                     buffer),
                    what);
  };
  two("[0,4]", "[2,6]", 6, "tensors 'a' and 'b' overlap");
  two("[0,4]", "[0,4]", 4, "overlap");
  two("[0,4]", "[6,10]", 10, "bytes [4, 6) of the data buffer belong to no tensor");
  two("[2,6]", "[6,10]", 10, "bytes [0, 2)");
  two("[0,4]", "[4,8]", 12, "bytes [8, 12) at the end");
  // An empty tensor inside another's range overlaps it.
  expect_rejected(dir,
                  file_with_header("{" + entry("a", "U8", "[4]", "[0,4]") + "," +
                                       entry("e", "U8", "[0]", "[2,2]") + "}",
                                   4),
                  "overlap");
}

TEST(SafetensorsMalformed, MetadataAndDuplicates) {
  TempDir dir;
  const std::string a = entry("a", "U8", "[4]", "[0,4]");
  const auto one = [&](const std::string& h, const std::string& what) {
    expect_rejected(dir, file_with_header(h, 4), what);
  };
  one("{\"__metadata__\":{\"k\":1}," + a + "}", "metadata value of 'k' is a number, not a string");
  one("{\"__metadata__\":{\"k\":[\"x\"]}," + a + "}", "metadata value of 'k' is a list");
  one("{\"__metadata__\":{\"k\":{}}," + a + "}", "metadata value of 'k' is an object");
  one("{\"__metadata__\":{\"k\":null}," + a + "}", "is null");
  one("{\"__metadata__\":\"x\"," + a + "}", "entry '__metadata__' is a string");
  one("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}," + a + "}", "metadata key 'k' appears twice");
  one("{\"__metadata__\":{},\"__metadata__\":{}," + a + "}", "\"__metadata__\" appears twice");
  one("{" + a + "," + a + "}", "tensor 'a' appears twice");
  one("{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
      "has field 'dtype' twice");
}

TEST(SafetensorsMalformed, NotAFile) {
  TempDir dir;
  EXPECT_THROW(SafetensorsFile::open(dir / "missing.safetensors"), FileReadError);
  try {
    SafetensorsFile::open(dir.path());
    ADD_FAILURE();
  } catch (const FileReadError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a folder, not a regular file"), std::string::npos) << e.what();
  }
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(SafetensorsFile::open(fifo), FileReadError);  // refused, not a hang
}

TEST(SafetensorsWrite, RefusesBadTensorsWithoutLeavingAFile) {
  TempDir dir;
  std::vector<float> x(4, 1.0f);
  const auto refuse = [&](std::vector<TensorToWrite> ts, std::map<std::string, std::string> meta,
                          const std::string& what) {
    SCOPED_TRACE(what);
    try {
      write_safetensors(dir / "w.safetensors", ts, meta);
      ADD_FAILURE() << "accepted";
    } catch (const FileWriteError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    EXPECT_TRUE(dir.entries().empty());
  };
  refuse({{"a", ElemType::F32, {4}, x.data()}, {"a", ElemType::F32, {4}, x.data()}}, {},
         "'a' repeats");
  refuse({{"__metadata__", ElemType::F32, {4}, x.data()}}, {}, "cannot name a tensor");
  refuse({{"a", ElemType::F32, {-4}, x.data()}}, {}, "negative dimension");
  refuse({{"a", ElemType::F32, {INT64_MAX, 4}, x.data()}}, {}, "overflows");
  refuse({{"a", ElemType::F32, {4}, nullptr}}, {}, "has no data");
  refuse({{"a", ElemType::F32, {4}, x.data()}}, {{"k", "\xff"}}, "not valid UTF-8");
}

}  // namespace
}  // namespace ts
