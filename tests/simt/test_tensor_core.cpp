// Tensor-core operations (instrumentation/simt/tensor_core.h and wmma.h) lane by lane, on either
// backend: test_simt runs the kernels of kernels/tensor_core.cuh on the CPU runtime,
// test_simt_gpu on an sm_80+ GPU, and both are held to the same expected values: every lane's
// registers where the PTX ISA puts them (tensor_core_reference.h), sums against a float64
// product, exactly where the sums are exact (small integers) and within the accumulation bound
// of an fp32 (or fp16) tensor core otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <utility>

#include "instrumentation/simt/mma_fragment_layout.h"
#include "tests/simt/kernel_launchers.h"
#include "tests/simt/tensor_core_reference.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

std::string place_text(const char* what, unsigned warp, unsigned lane, unsigned reg,
                       MatrixPlace at) {
  return std::string(what) + " of warp " + std::to_string(warp) + ", lane " + std::to_string(lane) +
         ", register " + std::to_string(reg) + " (row " + std::to_string(at.row) + ", col " +
         std::to_string(at.col) + ")";
}

// --- the layout header ---------------------------------------------------------------------

TEST(TensorCoreLayout, PublicLayoutFunctionsAreThePtxTables) {
  std::set<std::pair<unsigned, unsigned>> a, b, c, plain, transposed;
  for (unsigned lane = 0; lane < 32; ++lane) {
    for (unsigned i = 0; i < 8; ++i) {
      const ts::tc::FragmentCoordinate got = ts::tc::mma_m16n8k16_a(lane, i);
      const MatrixPlace want = ptx_a_place(lane, i);
      EXPECT_EQ(got.row, want.row) << "a" << i << " of lane " << lane;
      EXPECT_EQ(got.col, want.col) << "a" << i << " of lane " << lane;
      a.insert({got.row, got.col});
    }
    for (unsigned i = 0; i < 4; ++i) {
      const ts::tc::FragmentCoordinate got_b = ts::tc::mma_m16n8k16_b(lane, i);
      const ts::tc::FragmentCoordinate got_c = ts::tc::mma_m16n8k16_c(lane, i);
      EXPECT_EQ(got_b.row, ptx_b_place(lane, i).row) << "b" << i << " of lane " << lane;
      EXPECT_EQ(got_b.col, ptx_b_place(lane, i).col) << "b" << i << " of lane " << lane;
      EXPECT_EQ(got_c.row, ptx_c_place(lane, i).row) << "c" << i << " of lane " << lane;
      EXPECT_EQ(got_c.col, ptx_c_place(lane, i).col) << "c" << i << " of lane " << lane;
      b.insert({got_b.row, got_b.col});
      c.insert({got_c.row, got_c.col});
    }
    for (unsigned half = 0; half < 2; ++half) {
      for (bool trans : {false, true}) {
        const ts::tc::FragmentCoordinate got = ts::tc::ldmatrix_m8n8(lane, half, trans);
        EXPECT_EQ(got.row, ptx_ldmatrix_place(lane, half, trans).row);
        EXPECT_EQ(got.col, ptx_ldmatrix_place(lane, half, trans).col);
        (trans ? transposed : plain).insert({got.row, got.col});
      }
    }
  }
  // Each element of each matrix in exactly one (lane, register) slot.
  EXPECT_EQ(a.size(), 256u);
  EXPECT_EQ(b.size(), 128u);
  EXPECT_EQ(c.size(), 128u);
  EXPECT_EQ(plain.size(), 64u);
  EXPECT_EQ(transposed.size(), 64u);
}

// --- mma.m16n8k16 from registers -----------------------------------------------------------

// One warp's operands: A 16x16, B 16x8 (k x n), C 16x8, row-major, exactly representable.
struct MmaProblem {
  std::vector<float> a, b, c;
};

template <typename Element>
MmaProblem random_mma_problem(TestRandom& random, bool integers) {
  MmaProblem p;
  p.a = random_matrix<Element>(random, 16, 16, integers ? 4.0f : 2.0f, integers);
  p.b = random_matrix<Element>(random, 16, 8, integers ? 4.0f : 2.0f, integers);
  // C is fp32: any float (integers: -32..32, exact in either input type as well).
  p.c = integers ? random_matrix<__half>(random, 16, 8, 32.0f, true) : random.floats(128, -4, 4);
  return p;
}

// c + sum_k a[row][k] b[k][col] in float64 (exact for these inputs up to float64 rounding)
// and the sum of the magnitudes of its terms.
struct ExactSum {
  double value = 0.0;
  double magnitude = 0.0;
  void add(double term) {
    value += term;
    magnitude += std::fabs(term);
  }
};

ExactSum mma_exact(const MmaProblem& p, unsigned row, unsigned col) {
  ExactSum sum;
  sum.add(p.c[row * 8 + col]);
  for (unsigned k = 0; k < 16; ++k) sum.add(double{p.a[row * 16 + k]} * p.b[k * 8 + col]);
  return sum;
}

template <typename Element>
void check_mma_registers(bool integers, bool in_place) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  const unsigned blocks = 3;
  const unsigned threads = 64;
  const unsigned warps = blocks * threads / 32;
  std::vector<MmaProblem> problems;
  std::vector<uint32_t> a(4 * 32 * warps), b(2 * 32 * warps);
  std::vector<float> c(4 * 32 * warps);
  using Codec = ElementCodec<Element>;
  for (unsigned w = 0; w < warps; ++w) {
    const MmaProblem& p = problems.emplace_back(random_mma_problem<Element>(random, integers));
    for (unsigned lane = 0; lane < 32; ++lane) {
      const unsigned t = 32 * w + lane;
      const auto a_bits = [&](unsigned i) {
        const MatrixPlace at = ptx_a_place(lane, i);
        return Codec::bits_of(p.a[at.row * 16 + at.col]);
      };
      const auto b_bits = [&](unsigned i) {
        const MatrixPlace at = ptx_b_place(lane, i);
        return Codec::bits_of(p.b[at.row * 8 + at.col]);
      };
      for (unsigned r = 0; r < 4; ++r) a[4 * t + r] = pack_bits(a_bits(2 * r), a_bits(2 * r + 1));
      for (unsigned r = 0; r < 2; ++r) b[2 * t + r] = pack_bits(b_bits(2 * r), b_bits(2 * r + 1));
      for (unsigned i = 0; i < 4; ++i) {
        const MatrixPlace at = ptx_c_place(lane, i);
        c[4 * t + i] = p.c[at.row * 8 + at.col];
      }
    }
  }
  DeviceArray<uint32_t> d_a(a), d_b(b);
  DeviceArray<float> d_c(c), d_d(poisoned<float>(c.size()));
  const RunStatus status = run_mma_registers<Element>({dim3(blocks), dim3(threads)}, d_a.get(),
                                                      d_b.get(), d_c.get(), d_d.get(), in_place);
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const std::vector<float> d = d_d.to_host();
  for (unsigned w = 0; w < warps; ++w) {
    for (unsigned lane = 0; lane < 32; ++lane) {
      for (unsigned i = 0; i < 4; ++i) {
        const MatrixPlace at = ptx_c_place(lane, i);
        const ExactSum want = mma_exact(problems[w], at.row, at.col);
        const float got = d[4 * (32 * w + lane) + i];
        if (integers) {
          EXPECT_EQ(got, want.value) << place_text("D", w, lane, i, at);
        } else {
          EXPECT_NEAR(got, want.value, accumulation_tolerance(want.magnitude, 16, 24))
              << place_text("D", w, lane, i, at);
        }
      }
    }
    if (::testing::Test::HasFailure()) return;  // one warp's worth of messages is enough
  }
}

template <typename Element>
class MmaM16n8k16 : public ::testing::Test {};
using TensorElements = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(MmaM16n8k16, TensorElements);

TYPED_TEST(MmaM16n8k16, RandomInputsAgainstAFloat64Product) {
  check_mma_registers<TypeParam>(false, false);
}
TYPED_TEST(MmaM16n8k16, SmallIntegersExactly) { check_mma_registers<TypeParam>(true, false); }
TYPED_TEST(MmaM16n8k16, AccumulatingIntoCItself) { check_mma_registers<TypeParam>(true, true); }

// --- ldmatrix --------------------------------------------------------------------------------

template <int kMatrices, bool kTransposed>
void check_ldmatrix() {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  constexpr unsigned kThreads = 64;  // two warps, each with its own rows
  constexpr unsigned kRowSlots = 64;
  constexpr unsigned kDecoySlots = 16;  // rows named by lanes whose address is not read
  constexpr unsigned kRows = kRowSlots + kDecoySlots;
  // Distinct nonzero 16-bit patterns: a register holding the wrong element cannot match.
  std::vector<uint16_t> patterns(65535);
  std::iota(patterns.begin(), patterns.end(), uint16_t{1});
  std::shuffle(patterns.begin(), patterns.end(), random.engine());
  const std::vector<uint16_t> tile(patterns.begin(), patterns.begin() + 8 * kRows);
  // Rows in a random order, so that only each lane's own address can give the right row.
  std::vector<unsigned> slots(kRowSlots);
  std::iota(slots.begin(), slots.end(), 0u);
  std::shuffle(slots.begin(), slots.end(), random.engine());
  std::vector<unsigned> offsets(kThreads);
  for (unsigned t = 0; t < kThreads; ++t) {
    const bool read = t % 32 < 8 * kMatrices;
    offsets[t] =
        8 * (read ? slots[t] : kRowSlots + static_cast<unsigned>(random.engine()() % kDecoySlots));
  }
  DeviceArray<uint16_t> d_tile(tile);
  DeviceArray<unsigned> d_offsets(offsets);
  DeviceArray<uint32_t> d_out(poisoned<uint32_t>(kMatrices * kThreads));
  const RunStatus status = run_ldmatrix<kMatrices, kTransposed>(
      {dim3(1), dim3(kThreads), tile.size() * sizeof(uint16_t)}, d_tile.get(),
      static_cast<unsigned>(tile.size()), d_offsets.get(), d_out.get());
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const std::vector<uint32_t> out = d_out.to_host();
  for (unsigned t = 0; t < kThreads; ++t) {
    const unsigned warp = t / 32, lane = t % 32;
    for (unsigned m = 0; m < kMatrices; ++m) {
      for (unsigned half = 0; half < 2; ++half) {
        const MatrixPlace at = ptx_ldmatrix_place(lane, half, kTransposed);
        const uint16_t want = tile[offsets[32 * warp + 8 * m + at.row] + at.col];
        const auto got = static_cast<uint16_t>(out[kMatrices * t + m] >> (16 * half));
        EXPECT_EQ(got, want) << place_text("matrix element", warp, lane, m, at) << ", "
                             << (half == 0 ? "low" : "high") << " half";
      }
    }
  }
}

TEST(Ldmatrix, X1) { check_ldmatrix<1, false>(); }
TEST(Ldmatrix, X2) { check_ldmatrix<2, false>(); }
TEST(Ldmatrix, X4) { check_ldmatrix<4, false>(); }
TEST(Ldmatrix, X1Trans) { check_ldmatrix<1, true>(); }
TEST(Ldmatrix, X2Trans) { check_ldmatrix<2, true>(); }
TEST(Ldmatrix, X4Trans) { check_ldmatrix<4, true>(); }

// --- an attention step: cp.async, ldmatrix, mma, accumulators reused as A --------------------

template <typename Element>
void check_attention_tile(bool integers) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  using Codec = ElementCodec<Element>;
  const unsigned blocks = 3;
  const float magnitude = integers ? 4.0f : 1.0f;
  struct Block {
    std::vector<float> q, k, v, c_s, c_o;  // 16x16, 16x16 [key][dim], 16x8 [key][dim], 16x16, 16x8
  };
  std::vector<Block> problems(blocks);
  std::vector<uint16_t> tiles;
  std::vector<float> c_s(8 * 32 * blocks), c_o(4 * 32 * blocks);
  for (unsigned blk = 0; blk < blocks; ++blk) {
    Block& p = problems[blk];
    p.q = random_matrix<Element>(random, 16, 16, magnitude, integers);
    p.k = random_matrix<Element>(random, 16, 16, magnitude, integers);
    p.v = random_matrix<Element>(random, 16, 8, magnitude, integers);
    p.c_s =
        integers ? random_matrix<__half>(random, 16, 16, 32.0f, true) : random.floats(256, -2, 2);
    p.c_o =
        integers ? random_matrix<__half>(random, 16, 8, 32.0f, true) : random.floats(128, -2, 2);
    for (const auto* m : {&p.q, &p.k, &p.v}) {
      for (float x : *m) tiles.push_back(Codec::bits_of(x));
    }
    for (unsigned lane = 0; lane < 32; ++lane) {
      const unsigned t = 32 * blk + lane;
      for (unsigned i = 0; i < 4; ++i) {
        const MatrixPlace at = ptx_c_place(lane, i);
        for (unsigned tile = 0; tile < 2; ++tile) {
          c_s[8 * t + 4 * tile + i] = p.c_s[at.row * 16 + 8 * tile + at.col];
        }
        c_o[4 * t + i] = p.c_o[at.row * 8 + at.col];
      }
    }
  }
  ASSERT_EQ(tiles.size(), size_t{kAttentionTileElements} * blocks);
  DeviceArray<uint16_t> d_tiles(tiles);
  DeviceArray<float> d_c_s(c_s), d_c_o(c_o);
  DeviceArray<float> d_s(poisoned<float>(c_s.size())), d_o(poisoned<float>(c_o.size()));
  const RunStatus status = run_attention_tile<Element>(
      {dim3(blocks), dim3(32), kAttentionTileElements * sizeof(uint16_t)}, d_tiles.get(),
      d_c_s.get(), d_c_o.get(), d_s.get(), d_o.get());
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const std::vector<float> s = d_s.to_host(), o = d_o.to_host();

  for (unsigned blk = 0; blk < blocks; ++blk) {
    const Block& p = problems[blk];
    std::vector<float> p_matrix(256);  // P = S rounded to Element, as the kernel rounds it
    for (unsigned lane = 0; lane < 32; ++lane) {
      for (unsigned tile = 0; tile < 2; ++tile) {
        for (unsigned i = 0; i < 4; ++i) {
          MatrixPlace at = ptx_c_place(lane, i);
          at.col += 8 * tile;  // the key
          ExactSum want;
          want.add(p.c_s[at.row * 16 + at.col]);
          for (unsigned d = 0; d < 16; ++d) {
            want.add(double{p.q[at.row * 16 + d]} * p.k[at.col * 16 + d]);
          }
          const float got = s[8 * (32 * blk + lane) + 4 * tile + i];
          if (integers) {
            EXPECT_EQ(got, want.value) << place_text("S", blk, lane, 4 * tile + i, at);
          } else {
            EXPECT_NEAR(got, want.value, accumulation_tolerance(want.magnitude, 16, 24))
                << place_text("S", blk, lane, 4 * tile + i, at);
          }
          p_matrix[at.row * 16 + at.col] = round_to<Element>(got);
        }
      }
    }
    for (unsigned lane = 0; lane < 32; ++lane) {
      for (unsigned i = 0; i < 4; ++i) {
        const MatrixPlace at = ptx_c_place(lane, i);
        ExactSum want;
        want.add(p.c_o[at.row * 8 + at.col]);
        for (unsigned key = 0; key < 16; ++key) {
          want.add(double{p_matrix[at.row * 16 + key]} * p.v[key * 8 + at.col]);
        }
        const float got = o[4 * (32 * blk + lane) + i];
        if (integers) {
          EXPECT_EQ(got, want.value) << place_text("O", blk, lane, i, at);
        } else {
          EXPECT_NEAR(got, want.value, accumulation_tolerance(want.magnitude, 16, 24))
              << place_text("O", blk, lane, i, at);
        }
      }
    }
    if (::testing::Test::HasFailure()) return;
  }
}

template <typename Element>
class AttentionTile : public ::testing::Test {};
TYPED_TEST_SUITE(AttentionTile, TensorElements);

TYPED_TEST(AttentionTile, SmallIntegersExactly) { check_attention_tile<TypeParam>(true); }
TYPED_TEST(AttentionTile, RandomInputsAgainstFloat64) { check_attention_tile<TypeParam>(false); }

// --- cp.async ----------------------------------------------------------------------------------

// What word w of shared memory holds once its copy landed (test_types.h: the regions).
uint32_t landed_word(const std::vector<uint32_t>& src, unsigned w) {
  unsigned zfill_bytes = 16;
  if (w >= 352 && w < 480) zfill_bytes = async_copy_zfill_bytes((w - 352) / 4);
  if (w >= 480 && w < kAsyncCopyGroup1Word)
    zfill_bytes = 16 - async_copy_zfill_bytes((w - 480) / 4);
  const unsigned byte_in_chunk = 4 * (w % 4);
  unsigned char bytes[4];
  std::memcpy(bytes, &src[w], 4);
  for (unsigned j = 0; j < 4; ++j) {
    if (byte_in_chunk + j >= zfill_bytes) bytes[j] = 0;
  }
  uint32_t word;
  std::memcpy(&word, bytes, 4);
  return word;
}

TEST(AsyncCopy, EverySizeAndZeroFillLandByTheirWait) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  std::uniform_int_distribution<uint32_t> words(1, 0xfffffffeu);  // neither zero nor poison
  std::vector<uint32_t> src(kAsyncCopyWords);
  for (uint32_t& w : src) w = words(random.engine());
  DeviceArray<uint32_t> d_src(src);
  for (AsyncCopyMode mode : {AsyncCopyMode::wait_groups, AsyncCopyMode::wait_all}) {
    SCOPED_TRACE(mode == AsyncCopyMode::wait_all ? "wait_all" : "wait_group<1>, wait_group<0>");
    DeviceArray<uint32_t> d_out(poisoned<uint32_t>(3 * kAsyncCopyWords));
    const RunStatus status =
        run_async_copy({dim3(1), dim3(kAsyncCopyThreads), kAsyncCopyWords * sizeof(uint32_t)},
                       d_src.get(), d_out.get(), mode);
    ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
    const std::vector<uint32_t> out = d_out.to_host();
    for (unsigned w = 0; w < kAsyncCopyWords; ++w) {
      const bool group0 = w < kAsyncCopyGroup1Word;
      if (group0) {
        EXPECT_EQ(out[w], landed_word(src, w)) << "group 0, word " << w;
      } else {
        EXPECT_TRUE(is_poison(out[w])) << "snapshot 0 wrote group 1's word " << w;
      }
      if (group0 || mode == AsyncCopyMode::wait_all) {
        EXPECT_TRUE(is_poison(out[kAsyncCopyWords + w])) << "snapshot 1 wrote word " << w;
      }
      if (group0) {
        EXPECT_TRUE(is_poison(out[2 * kAsyncCopyWords + w])) << "snapshot 2 wrote word " << w;
      } else {
        EXPECT_EQ(out[2 * kAsyncCopyWords + w], src[w]) << "group 1, word " << w;
      }
    }
  }
}

// --- wmma ----------------------------------------------------------------------------------------

template <typename T>
T to_stored(float value) {
  if constexpr (std::is_same_v<T, float>) {
    return value;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(value);
  } else {
    return __float2bfloat16_rn(value);
  }
}
template <typename T>
float from_stored(T value) {
  if constexpr (std::is_same_v<T, float>) {
    return value;
  } else {
    return __half2float(value);
  }
}

// Element (row, col) of a 16x16 matrix with leading dimension kWmmaLdm in either layout.
size_t wmma_index(unsigned row, unsigned col, bool col_major) {
  return col_major ? size_t{col} * kWmmaLdm + row : size_t{row} * kWmmaLdm + col;
}

template <typename Input, typename Accumulator, bool kAColMajor, bool kBColMajor>
void check_wmma(TestRandom& random, bool c_col_major, bool d_col_major, bool fill, bool integers) {
  SCOPED_TRACE(std::string("A ") + (kAColMajor ? "col" : "row") + "_major, B " +
               (kBColMajor ? "col" : "row") + "_major, C " +
               (fill          ? "filled"
                : c_col_major ? "mem_col_major"
                              : "mem_row_major") +
               ", D " + (d_col_major ? "mem_col_major" : "mem_row_major"));
  constexpr unsigned kWarps = 2;
  constexpr bool kHalfAccumulator = std::is_same_v<Accumulator, __half>;
  const float fill_value = integers ? 3.0f : 0.5f;
  // Padding between the rows (or columns) is NaN: a load that reads it poisons the result.
  std::vector<Input> a(kWarps * kWmmaTileElements, to_stored<Input>(NAN));
  std::vector<Input> b(a.size(), to_stored<Input>(NAN));
  std::vector<Accumulator> c(a.size(), to_stored<Accumulator>(NAN));
  std::vector<std::vector<float>> a_m, b_m, c_m;
  for (unsigned w = 0; w < kWarps; ++w) {
    a_m.push_back(random_matrix<Input>(random, 16, 16, integers ? 4.0f : 2.0f, integers));
    b_m.push_back(random_matrix<Input>(random, 16, 16, integers ? 4.0f : 2.0f, integers));
    c_m.push_back(random_matrix<__half>(random, 16, 16, integers ? 32.0f : 4.0f, integers));
    for (unsigned row = 0; row < 16; ++row) {
      for (unsigned col = 0; col < 16; ++col) {
        const size_t base = w * kWmmaTileElements;
        a[base + wmma_index(row, col, kAColMajor)] = to_stored<Input>(a_m[w][row * 16 + col]);
        b[base + wmma_index(row, col, kBColMajor)] = to_stored<Input>(b_m[w][row * 16 + col]);
        c[base + wmma_index(row, col, c_col_major)] =
            to_stored<Accumulator>(c_m[w][row * 16 + col]);
      }
    }
  }
  DeviceArray<Input> d_a(a), d_b(b);
  DeviceArray<Accumulator> d_c(c), d_d(poisoned<Accumulator>(c.size()));
  const RunStatus status = run_wmma<Input, Accumulator, kAColMajor, kBColMajor>(
      {dim3(1), dim3(32 * kWarps)}, d_a.get(), d_b.get(), d_c.get(), d_d.get(), c_col_major,
      d_col_major, fill, fill_value);
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const std::vector<Accumulator> d = d_d.to_host();
  for (unsigned w = 0; w < kWarps; ++w) {
    std::vector<bool> written(kWmmaTileElements, false);
    for (unsigned row = 0; row < 16; ++row) {
      for (unsigned col = 0; col < 16; ++col) {
        ExactSum sum;
        sum.add(fill ? fill_value : c_m[w][row * 16 + col]);
        for (unsigned k = 0; k < 16; ++k) {
          sum.add(double{a_m[w][row * 16 + k]} * b_m[w][k * 16 + col]);
        }
        const size_t at = wmma_index(row, col, d_col_major);
        written[at] = true;
        const float got = from_stored(d[w * kWmmaTileElements + at]);
        const double want = 2.0 * sum.value;  // the kernel doubles every element
        const std::string where = "D[" + std::to_string(row) + "][" + std::to_string(col) +
                                  "] of warp " + std::to_string(w);
        if (integers) {
          EXPECT_EQ(got, want) << where;
        } else if (kHalfAccumulator) {
          EXPECT_NEAR(got, want,
                      2.0 * accumulation_tolerance(sum.magnitude, 16, 11) +
                          std::ldexp(std::fabs(want), -11))
              << where;
        } else {
          EXPECT_NEAR(got, want, 2.0 * accumulation_tolerance(sum.magnitude, 16, 24)) << where;
        }
      }
    }
    for (unsigned i = 0; i < kWmmaTileElements; ++i) {
      if (!written[i]) {
        EXPECT_TRUE(is_poison(d[w * kWmmaTileElements + i]))
            << "padding element " << i << " of warp " << w;
      }
    }
    if (::testing::Test::HasFailure()) return;
  }
}

template <typename Input, typename Accumulator>
void check_wmma_every_layout(bool fill, bool integers) {
  TestRandom random;
  SCOPED_TRACE(random.trace());
  for (bool c_col_major : {false, true}) {
    for (bool d_col_major : {false, true}) {
      check_wmma<Input, Accumulator, false, false>(random, c_col_major, d_col_major, fill,
                                                   integers);
      check_wmma<Input, Accumulator, false, true>(random, c_col_major, d_col_major, fill, integers);
      check_wmma<Input, Accumulator, true, false>(random, c_col_major, d_col_major, fill, integers);
      check_wmma<Input, Accumulator, true, true>(random, c_col_major, d_col_major, fill, integers);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(Wmma, HalfInputsFloatAccumulatorsEveryLayout) {
  check_wmma_every_layout<__half, float>(false, false);
}
TEST(Wmma, HalfInputsHalfAccumulatorsEveryLayout) {
  check_wmma_every_layout<__half, __half>(false, false);
}
TEST(Wmma, Bf16InputsFloatAccumulatorsEveryLayout) {
  check_wmma_every_layout<__nv_bfloat16, float>(false, false);
}
TEST(Wmma, SmallIntegersExactly) {
  check_wmma_every_layout<__half, float>(false, true);
  check_wmma_every_layout<__half, __half>(false, true);
  check_wmma_every_layout<__nv_bfloat16, float>(false, true);
}
TEST(Wmma, FillFragmentThenElementWiseOps) {
  check_wmma_every_layout<__half, float>(true, true);
  check_wmma_every_layout<__half, __half>(true, false);
  check_wmma_every_layout<__nv_bfloat16, float>(true, false);
}

}  // namespace
}  // namespace ts::test
