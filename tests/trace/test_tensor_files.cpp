// Tensors for the kernels' inputs from .npy and .safetensors files, and SHA-256 of files
// (checked against the FIPS 180-2 test vectors and against the bytes' own digest).
#include <gtest/gtest.h>

#include "instrumentation/trace/npy.h"
#include "instrumentation/trace/tensor_files.h"
#include "tests/trace/trace_test_util.h"

namespace ts {
namespace {

using test::TempDir;

HostTensor random_tensor(std::mt19937_64& rng, DType dtype, std::vector<int64_t> shape) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_float(i, normal(rng));
  return t;
}

TEST(TensorFiles, LoadsNpyFloat32AndFloat16) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  for (DType dtype : {DType::f32, DType::f16}) {
    const HostTensor t = random_tensor(rng, dtype, {2, 3, 17, 64});
    write_npy(dir / "q.npy", dtype == DType::f32 ? ElemType::F32 : ElemType::F16, t.shape,
              t.bytes.data());
    const HostTensor back = load_tensor_file(dir / "q.npy");
    EXPECT_EQ(back.dtype, dtype);
    EXPECT_EQ(back.shape, t.shape);
    EXPECT_EQ(back.bytes, t.bytes);
  }
}

TEST(TensorFiles, LoadsNamedSafetensorsTensorsOfEachFloatDtype) {
  TS_SEED_TRACE();
  std::mt19937_64 rng(test::run_seed());
  TempDir dir;
  const HostTensor q = random_tensor(rng, DType::f32, {1, 2, 33, 32});
  const HostTensor k = random_tensor(rng, DType::f16, {1, 2, 65, 32});
  const HostTensor v = random_tensor(rng, DType::bf16, {1, 2, 65, 32});
  std::vector<int32_t> ints(5, 3);
  write_safetensors(dir / "qkv.safetensors",
                    std::vector<TensorToWrite>{tensor_to_write("q", q), tensor_to_write("k", k),
                                               tensor_to_write("v", v),
                                               {"ints", ElemType::I32, {5}, ints.data()}},
                    {});
  for (const auto& [name, want] : {std::pair{"q", &q}, std::pair{"k", &k}, std::pair{"v", &v}}) {
    const HostTensor got = load_tensor_file(dir / "qkv.safetensors", name);
    EXPECT_EQ(got.dtype, want->dtype) << name;
    EXPECT_EQ(got.shape, want->shape) << name;
    EXPECT_EQ(got.bytes, want->bytes) << name;
  }
  // One tensor: no name needed.
  write_safetensors(dir / "one.safetensors", std::vector<TensorToWrite>{tensor_to_write("x", v)}, {});
  EXPECT_EQ(load_tensor_file(dir / "one.safetensors").bytes, v.bytes);
}

template <typename E>
void expect_error(const std::function<void()>& fn, const std::string& what) {
  SCOPED_TRACE(what);
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(TensorFiles, ClearErrors) {
  TempDir dir;
  const auto p = [&](const char* n) { return dir / n; };
  expect_error<FileReadError>([&] { load_tensor_file(p("missing.npy")); },
                              p("missing.npy").string() + ": No such file");
  test::write_bytes(p("text.txt"), "hello world, not a tensor", 25);
  expect_error<TensorFileError>([&] { load_tensor_file(p("text.txt")); },
                                "neither a .npy nor a .safetensors file");
  const double d[3] = {1, 2, 3};
  const int64_t shape[1] = {3};
  write_npy(p("d.npy"), ElemType::F64, shape, d);
  expect_error<TensorFileError>([&] { load_tensor_file(p("d.npy")); }, "dtype <f8 is not supported");
  expect_error<TensorFileError>([&] { load_tensor_file(p("d.npy"), "q"); }, "a .npy file holds one array");
  const float f[3] = {1, 2, 3};
  write_safetensors(p("two.safetensors"),
                    std::vector<TensorToWrite>{{"a", ElemType::F32, {3}, f}, {"b", ElemType::F64, {3}, d}},
                    {});
  expect_error<TensorFileError>([&] { load_tensor_file(p("two.safetensors")); },
                                "holds 2 tensors; name the one to use (a, b)");
  expect_error<TensorFileError>([&] { load_tensor_file(p("two.safetensors"), "c"); },
                                "no tensor named 'c' (it holds: a, b)");
  expect_error<TensorFileError>([&] { load_tensor_file(p("two.safetensors"), "b"); },
                                "tensor 'b' has dtype F64");
  auto bytes = test::read_bytes(p("two.safetensors"));
  bytes.resize(bytes.size() - 1);
  test::write_bytes(p("cut.safetensors"), bytes);
  expect_error<TraceFormatError>([&] { load_tensor_file(p("cut.safetensors"), "a"); }, "truncated");
}

TEST(Sha256, KnownVectorsAndFiles) {
  TS_SEED_TRACE();
  TempDir dir;
  const auto digest = [](const std::string& s) {
    return sha256_hex({reinterpret_cast<const std::byte*>(s.data()), s.size()});
  };
  EXPECT_EQ(digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A random file larger than the read chunk: the streamed digest equals the one-shot digest.
  std::mt19937_64 rng(test::run_seed());
  std::vector<std::byte> data((size_t{1} << 20) * 3 + rng() % 100000);
  for (auto& b : data) b = static_cast<std::byte>(rng());
  test::write_bytes(dir / "r.bin", data);
  const std::string h = sha256_file(dir / "r.bin");
  EXPECT_EQ(h.size(), 64u);
  EXPECT_EQ(h, sha256_hex(data));
  data[data.size() / 2] ^= std::byte{1};
  EXPECT_NE(h, sha256_hex(data));
  EXPECT_THROW(sha256_file(dir / "none"), FileReadError);
  EXPECT_THROW(sha256_file(dir.path()), FileReadError);
}

}  // namespace
}  // namespace ts
