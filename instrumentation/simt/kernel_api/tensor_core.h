// The CPU emulation of the tensor-core operations of instrumentation/simt/tensor_core.h:
// mma.m16n8k16 and ldmatrix.m8n8 as warp collectives (every lane of the warp hands in its
// registers; the last to arrive computes every lane's results with the PTX fragment layout of
// mma_fragment_layout.h), cp.async as the runtime's per-thread copy queue.
//
// Arithmetic of mma (fp16 or bf16 inputs, fp32 accumulate): the inputs widen exactly to float
// and every product of two of them is exact in float (11 + 11 significant bits for fp16; for
// bf16 8 + 8, exact unless the product leaves float's normal range, i.e. |a*b| < 2^-126 or
// > 2^128, where a GPU's internal format is unspecified). Each D element is then
//     d = c;  for k = 0..15: d = round_to_nearest_even(d + a[row][k] * b[k][col])
// in float: sequential in k, one rounding per step. The hardware's accumulation order and
// rounding are not specified by PTX (and are not sequential IEEE additions); results whose
// sums are exact in float (e.g. small integers) are identical on both executors, others may
// differ by a few units in the last place. (The product being exact, a fused multiply-add
// gives the same d as a multiply then an add, whatever the compiler contracts.)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "instrumentation/simt/kernel_api/runtime_hooks.h"
#include "instrumentation/simt/kernel_api/source_place.h"
#include "instrumentation/simt/mma_fragment_layout.h"

namespace simt::detail {

// --- element types ---------------------------------------------------------------------

// What differs between the fp16 and bf16 forms of an instruction: its name and the widening
// of an element's bits to float.
template <typename Element>
struct TensorElement;
template <>
struct TensorElement<__half> {
  static constexpr const char* kMmaName = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
  // Exact, without branches (__half2float's two branches were a fifth of an mma): the fp16
  // exponent and significand moved to float's places read as a float 2^-112 times the value,
  // normal or subnormal alike (a subnormal fp16 becomes a subnormal float, exactly); scaling by
  // 2^112 is exact. Infinity and NaN (exponent all ones) take float's all-ones exponent. (In a
  // process that sets the CPU's denormals-are-zero mode, e.g. one built with -ffast-math,
  // subnormal inputs read as zero, as they would in the arithmetic anyway.)
  static float to_float(uint16_t bits) {
    const uint32_t moved = uint32_t{bits & 0x7fffu} << 13;
    float magnitude;
    std::memcpy(&magnitude, &moved, sizeof magnitude);
    magnitude *= 0x1p112f;
    uint32_t result;
    std::memcpy(&result, &magnitude, sizeof result);
    const bool inf_or_nan = (bits & 0x7c00u) == 0x7c00u;
    result = (inf_or_nan ? moved | 0x7f800000u : result) | uint32_t{bits & 0x8000u} << 16;
    float value;
    std::memcpy(&value, &result, sizeof value);
    return value;
  }
};
template <>
struct TensorElement<__nv_bfloat16> {
  static constexpr const char* kMmaName = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
  static float to_float(uint16_t bits) {
    const uint32_t widened = uint32_t{bits} << 16;  // bf16 is the top half of a float
    float value;
    std::memcpy(&value, &widened, sizeof value);
    return value;
  }
};

// Element i (0 = low half) of a register holding two 16-bit elements.
inline uint16_t register_half(uint32_t reg, unsigned i) {
  return static_cast<uint16_t>(reg >> (16 * i));
}

// --- the arithmetic ------------------------------------------------------------------------

// acc[m][n] += sum over k of a[m][k] * b[k][n], each element summed in k order with one float
// rounding per step (see the top of this file). k outermost and n innermost: the compiler
// vectorises across independent sums without reordering any one of them, and consecutive
// updates go to different rows, so no store waits for the load of the one before (with m
// outermost, a row's sums went through memory at every k: 40% of an mma's time).
template <int M, int N, int K>
inline void multiply_accumulate(const float (&a)[M][K], const float (&b)[K][N],
                                float (&acc)[M][N]) {
  for (int k = 0; k < K; ++k) {
    for (int m = 0; m < M; ++m) {
      const float a_mk = a[m][k];
      for (int n = 0; n < N; ++n) acc[m][n] += a_mk * b[k][n];
    }
  }
}

// --- mma.m16n8k16 ----------------------------------------------------------------------

struct MmaM16n8k16Parcel {
  const uint32_t* a;  // 4 registers
  const uint32_t* b;  // 2 registers
  const float* c;     // 4
  float* d;           // 4 (may be c)
};

template <typename Element>
std::string complete_mma_m16n8k16(void* const parcels[32]) {
  float a[16][16];
  float b[16][8];
  float acc[16][8];
  for (unsigned lane = 0; lane < 32; ++lane) {
    const auto& parcel = *static_cast<const MmaM16n8k16Parcel*>(parcels[lane]);
    for (unsigned i = 0; i < 8; ++i) {
      const ts::tc::FragmentCoordinate at = ts::tc::mma_m16n8k16_a(lane, i);
      a[at.row][at.col] = TensorElement<Element>::to_float(register_half(parcel.a[i / 2], i % 2));
    }
    for (unsigned i = 0; i < 4; ++i) {
      const ts::tc::FragmentCoordinate at = ts::tc::mma_m16n8k16_b(lane, i);
      b[at.row][at.col] = TensorElement<Element>::to_float(register_half(parcel.b[i / 2], i % 2));
      const ts::tc::FragmentCoordinate out = ts::tc::mma_m16n8k16_c(lane, i);
      acc[out.row][out.col] = parcel.c[i];
    }
  }
  multiply_accumulate(a, b, acc);
  for (unsigned lane = 0; lane < 32; ++lane) {
    const auto& parcel = *static_cast<const MmaM16n8k16Parcel*>(parcels[lane]);
    for (unsigned i = 0; i < 4; ++i) {
      const ts::tc::FragmentCoordinate out = ts::tc::mma_m16n8k16_c(lane, i);
      parcel.d[i] = acc[out.row][out.col];
    }
  }
  return {};
}

template <typename Element>
inline constexpr WarpCollective kMmaM16n8k16{TensorElement<Element>::kMmaName,
                                             &complete_mma_m16n8k16<Element>};

template <typename Element>
inline void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                         const float (&c)[4], const SourcePlace& where) {
  MmaM16n8k16Parcel parcel{a, b, c, d};
  warp_collective(kMmaM16n8k16<Element>, &parcel, where);
}

// --- ldmatrix.m8n8 ---------------------------------------------------------------------

// The caller's lane: its linear index in the block modulo 32, as warps are formed.
inline unsigned lane_of_caller() {
  const uint3 t = current_thread->thread_idx;
  const dim3 d = current_block->block_dim;
  return (t.x + d.x * (t.y + d.y * t.z)) % 32;
}

struct LdmatrixParcel {
  const unsigned char* row;  // this lane's row address (read only from lanes 0..8*count-1)
  uint32_t* registers;       // count of them
};

template <int kMatrices, bool kTransposed>
struct LdmatrixForm {
  static constexpr const char* kName =
      kTransposed ? (kMatrices == 1   ? "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16"
                     : kMatrices == 2 ? "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"
                                      : "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
                  : (kMatrices == 1   ? "ldmatrix.sync.aligned.m8n8.x1.shared.b16"
                     : kMatrices == 2 ? "ldmatrix.sync.aligned.m8n8.x2.shared.b16"
                                      : "ldmatrix.sync.aligned.m8n8.x4.shared.b16");
};

template <int kMatrices, bool kTransposed>
std::string complete_ldmatrix(void* const parcels[32]) {
  // Element (row, col) of matrix m: 2 bytes at column col of the row lane 8m + row supplied.
  const auto element = [parcels](unsigned m, ts::tc::FragmentCoordinate at) {
    uint16_t bits;
    std::memcpy(&bits,
                static_cast<const LdmatrixParcel*>(parcels[8 * m + at.row])->row + 2 * at.col,
                sizeof bits);
    return uint32_t{bits};
  };
  for (unsigned lane = 0; lane < 32; ++lane) {
    uint32_t* registers = static_cast<LdmatrixParcel*>(parcels[lane])->registers;
    for (unsigned m = 0; m < kMatrices; ++m) {
      registers[m] = element(m, ts::tc::ldmatrix_m8n8(lane, 0, kTransposed)) |
                     element(m, ts::tc::ldmatrix_m8n8(lane, 1, kTransposed)) << 16;
    }
  }
  return {};
}

template <int kMatrices, bool kTransposed>
inline constexpr WarpCollective kLdmatrix{LdmatrixForm<kMatrices, kTransposed>::kName,
                                          &complete_ldmatrix<kMatrices, kTransposed>};

template <int kMatrices, bool kTransposed>
inline void ldmatrix(uint32_t (&registers)[kMatrices], const void* row, const SourcePlace& where) {
  const unsigned lane = lane_of_caller();
  if (lane < 8 * kMatrices && reinterpret_cast<uintptr_t>(row) % 16 != 0) {
    char address[32];
    std::snprintf(address, sizeof address, "%p", row);
    const std::string what = std::string(LdmatrixForm<kMatrices, kTransposed>::kName) +
                             " with the address of row " + std::to_string(lane % 8) +
                             " of matrix " + std::to_string(lane / 8) + " at " + address +
                             ", which is not 16-byte aligned";
    kernel_abort(what.c_str(), where);
  }
  LdmatrixParcel parcel{static_cast<const unsigned char*>(row), registers};
  warp_collective(kLdmatrix<kMatrices, kTransposed>, &parcel, where);
}

}  // namespace simt::detail
