// CUDA's warp matrix API (nvcuda::wmma, <mma.h>) for the host build of a kernel: fragments,
// fill_fragment, load_matrix_sync, store_matrix_sync and mma_sync for the m16n16k16 shape with
// __half or __nv_bfloat16 inputs and float (or, for __half inputs, __half) accumulators.
// <mma.h> itself declares nothing outside nvcc; instrumentation/simt/wmma.h picks this or it.
//
// Same interface as CUDA's: fragment<Use, 16, 16, 16, T, Layout> with num_elements (the GPU's
// counts: 16 for __half A and B, 8 for __nv_bfloat16 A and B and for accumulators), x[],
// element_type; layout tags row_major/col_major; layout_t mem_row_major/mem_col_major.
//
// Which matrix element x[i] holds is unspecified in CUDA; here it is the mma.m16n8k16 layout
// (mma_fragment_layout.h), the 16 columns of B and of the accumulator being two 8-column halves:
//   matrix_a:    x[i] = A at mma_m16n8k16_a(lane, i)                 (i = 0..7)
//   matrix_b:    x[i] = B at mma_m16n8k16_b(lane, i % 4), col + 8 * (i / 4)
//   accumulator: x[i] = C at mma_m16n8k16_c(lane, i % 4), col + 8 * (i / 4)
// and the 16-element __half fragments hold that twice: x[i + 8] is another copy of x[i]
// (load and fill write both; mma_sync reads x[0..7]). Element-wise code that loops over
// num_elements therefore works as on a GPU; code that relies on the mapping does not port.
//
// load/store/mma are warp collectives (all 32 lanes, as the _sync names require; see
// runtime_hooks.h). The runtime also checks what CUDA requires and a GPU does not report: all
// lanes pass the same pointer, ldm and layout; the pointer is 256-bit (32-byte) aligned; ldm
// is a multiple of 16 bytes. mma_sync computes as mma.m16n8k16 does on the CPU
// (kernel_api/tensor_core.h: exact products, fp32 sums in k order), rounding once to __half for
// __half accumulators.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "instrumentation/simt/kernel_api/runtime_hooks.h"
#include "instrumentation/simt/kernel_api/source_place.h"
#include "instrumentation/simt/kernel_api/tensor_core.h"
#include "instrumentation/simt/mma_fragment_layout.h"

namespace nvcuda::wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;

enum layout_t { mem_row_major, mem_col_major };

// What every fragment is: CUDA's base (whose name is reserved to the implementation) with
// the same members.
template <typename T, int kElements>
struct alignas(8) fragment_storage {
  enum { num_elements = kElements };
  enum { num_storage_elements = kElements };
  using element_type = T;
  using storage_element_type = T;
  storage_element_type x[kElements];
};

}  // namespace nvcuda::wmma

namespace simt::detail {

// The fragments this runtime provides, with the GPU's element counts.
template <typename Use, int m, int n, int k, typename T, typename Layout>
constexpr int wmma_element_count() {
  using namespace nvcuda::wmma;
  static_assert(m == 16 && n == 16 && k == 16,
                "the CPU runtime's wmma provides the m16n16k16 shape only");
  constexpr bool input = std::is_same_v<Use, matrix_a> || std::is_same_v<Use, matrix_b>;
  static_assert(input || std::is_same_v<Use, accumulator>, "Use: matrix_a, matrix_b, accumulator");
  if constexpr (input) {
    static_assert(std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>,
                  "matrix_a and matrix_b fragments take row_major or col_major");
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
                  "the CPU runtime's wmma takes __half or __nv_bfloat16 inputs");
    return std::is_same_v<T, __half> ? 16 : 8;
  } else {
    static_assert(std::is_void_v<Layout>, "accumulator fragments have no layout parameter");
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, __half>,
                  "the CPU runtime's wmma accumulates in float or __half");
    return 8;
  }
}

enum class WmmaRole : uint8_t { a, b, accumulator };

template <typename Use>
constexpr WmmaRole wmma_role() {
  if constexpr (std::is_same_v<Use, nvcuda::wmma::matrix_a>) return WmmaRole::a;
  if constexpr (std::is_same_v<Use, nvcuda::wmma::matrix_b>) return WmmaRole::b;
  return WmmaRole::accumulator;
}

// The matrix element x[i] of `lane`'s fragment holds (the mapping at the top of this file).
inline ts::tc::FragmentCoordinate wmma_element(WmmaRole role, unsigned lane, unsigned i) {
  i %= 8;  // x[i + 8] of a 16-element fragment is a copy of x[i]
  if (role == WmmaRole::a) return ts::tc::mma_m16n8k16_a(lane, i);
  ts::tc::FragmentCoordinate at = role == WmmaRole::b ? ts::tc::mma_m16n8k16_b(lane, i % 4)
                                                      : ts::tc::mma_m16n8k16_c(lane, i % 4);
  at.col += 8 * (i / 4);
  return at;
}

template <typename T>
float wmma_to_float(T value) {
  if constexpr (std::is_same_v<T, float>) {
    return value;
  } else if constexpr (std::is_same_v<T, __half>) {
    return TensorElement<__half>::to_float(__half_as_ushort(value));
  } else {
    return TensorElement<__nv_bfloat16>::to_float(__bfloat16_as_ushort(value));
  }
}
template <typename T>
T wmma_from_float(float value) {
  if constexpr (std::is_same_v<T, float>) {
    return value;
  } else {
    return __float2half_rn(value);  // accumulators are float or __half
  }
}

// --- load_matrix_sync / store_matrix_sync -------------------------------------------------

struct WmmaMemoryParcel {
  const void* matrix;  // mptr
  unsigned ldm;
  nvcuda::wmma::layout_t layout;
  void* elements;  // the lane's x[]
};

// What CUDA requires of mptr, ldm and layout that the lanes of one call break, or "".
template <typename T>
std::string wmma_memory_problem(void* const parcels[32], const char* pointer_name) {
  const auto& first = *static_cast<const WmmaMemoryParcel*>(parcels[0]);
  for (unsigned lane = 1; lane < 32; ++lane) {
    const auto& p = *static_cast<const WmmaMemoryParcel*>(parcels[lane]);
    if (p.matrix != first.matrix || p.ldm != first.ldm || p.layout != first.layout) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "lane 0 passed %s %p, ldm %u, layout %d but lane %u passed %p, %u, %d",
                    pointer_name, first.matrix, first.ldm, static_cast<int>(first.layout), lane,
                    p.matrix, p.ldm, static_cast<int>(p.layout));
      return std::string(text) + " (every lane of the warp must pass the same " + pointer_name +
             ", ldm and layout)";
    }
  }
  if (reinterpret_cast<uintptr_t>(first.matrix) % 32 != 0) {
    char text[96];
    std::snprintf(text, sizeof text, "%s %p is not 256-bit (32-byte) aligned", pointer_name,
                  first.matrix);
    return text;
  }
  if (first.ldm * sizeof(T) % 16 != 0) {
    return "ldm " + std::to_string(first.ldm) + " is not a multiple of 16 bytes (" +
           std::to_string(16 / sizeof(T)) + " elements)";
  }
  return {};
}

// Offset of element (row, col) in memory of `layout` with leading dimension ldm.
inline size_t wmma_offset(ts::tc::FragmentCoordinate at, unsigned ldm,
                          nvcuda::wmma::layout_t layout) {
  return layout == nvcuda::wmma::mem_row_major ? size_t{at.row} * ldm + at.col
                                               : size_t{at.col} * ldm + at.row;
}

template <typename T, int kElements, WmmaRole kRole>
std::string complete_wmma_load(void* const parcels[32]) {
  if (std::string problem = wmma_memory_problem<T>(parcels, "mptr"); !problem.empty()) {
    return problem;
  }
  for (unsigned lane = 0; lane < 32; ++lane) {
    const auto& p = *static_cast<const WmmaMemoryParcel*>(parcels[lane]);
    const T* matrix = static_cast<const T*>(p.matrix);
    T* elements = static_cast<T*>(p.elements);
    for (unsigned i = 0; i < kElements; ++i) {
      elements[i] = matrix[wmma_offset(wmma_element(kRole, lane, i), p.ldm, p.layout)];
    }
  }
  return {};
}

template <typename T>
std::string complete_wmma_store(void* const parcels[32]) {
  if (std::string problem = wmma_memory_problem<T>(parcels, "mptr"); !problem.empty()) {
    return problem;
  }
  for (unsigned lane = 0; lane < 32; ++lane) {
    const auto& p = *static_cast<const WmmaMemoryParcel*>(parcels[lane]);
    T* matrix = static_cast<T*>(const_cast<void*>(p.matrix));
    const T* elements = static_cast<const T*>(p.elements);
    for (unsigned i = 0; i < 8; ++i) {
      matrix[wmma_offset(wmma_element(WmmaRole::accumulator, lane, i), p.ldm, p.layout)] =
          elements[i];
    }
  }
  return {};
}

template <typename T, int kElements, WmmaRole kRole>
inline constexpr WarpCollective kWmmaLoad{"wmma::load_matrix_sync",
                                          &complete_wmma_load<T, kElements, kRole>};
template <typename T>
inline constexpr WarpCollective kWmmaStore{"wmma::store_matrix_sync", &complete_wmma_store<T>};

// --- mma_sync ------------------------------------------------------------------------------

struct WmmaMmaParcel {
  const void* a;  // the lanes' x[] of each fragment
  const void* b;
  const void* c;
  void* d;  // may be c
};

template <typename Input, typename AccumulatorIn, typename AccumulatorOut>
std::string complete_wmma_mma(void* const parcels[32]) {
  float a[16][16];
  float b[16][16];
  float acc[16][16];
  for (unsigned lane = 0; lane < 32; ++lane) {
    const auto& p = *static_cast<const WmmaMmaParcel*>(parcels[lane]);
    for (unsigned i = 0; i < 8; ++i) {
      const ts::tc::FragmentCoordinate in_a = wmma_element(WmmaRole::a, lane, i);
      const ts::tc::FragmentCoordinate in_b = wmma_element(WmmaRole::b, lane, i);
      const ts::tc::FragmentCoordinate in_c = wmma_element(WmmaRole::accumulator, lane, i);
      a[in_a.row][in_a.col] = wmma_to_float(static_cast<const Input*>(p.a)[i]);
      b[in_b.row][in_b.col] = wmma_to_float(static_cast<const Input*>(p.b)[i]);
      acc[in_c.row][in_c.col] = wmma_to_float(static_cast<const AccumulatorIn*>(p.c)[i]);
    }
  }
  multiply_accumulate(a, b, acc);
  for (unsigned lane = 0; lane < 32; ++lane) {
    const auto& p = *static_cast<const WmmaMmaParcel*>(parcels[lane]);
    AccumulatorOut* d = static_cast<AccumulatorOut*>(p.d);
    for (unsigned i = 0; i < 8; ++i) {
      const ts::tc::FragmentCoordinate out = wmma_element(WmmaRole::accumulator, lane, i);
      d[i] = wmma_from_float<AccumulatorOut>(acc[out.row][out.col]);
    }
  }
  return {};
}

template <typename Input, typename AccumulatorIn, typename AccumulatorOut>
inline constexpr WarpCollective kWmmaMma{"wmma::mma_sync",
                                         &complete_wmma_mma<Input, AccumulatorIn, AccumulatorOut>};

}  // namespace simt::detail

namespace nvcuda::wmma {

template <typename Use, int m, int n, int k, typename T, typename Layout = void>
class fragment
    : public fragment_storage<T, ::simt::detail::wmma_element_count<Use, m, n, k, T, Layout>()> {};

// Every element of the fragment (both copies of a duplicated one) set to `value`.
template <typename T, int kElements>
inline void fill_fragment(fragment_storage<T, kElements>& f, const std::type_identity_t<T>& value) {
  for (int i = 0; i < kElements; ++i) f.x[i] = value;
}

template <typename Use, typename T, typename Layout>
requires(!std::is_same_v<Use, accumulator>) inline void load_matrix_sync(
    fragment<Use, 16, 16, 16, T, Layout>& f, const T* mptr, unsigned ldm, TS_SIMT_CALLER_PLACE) {
  constexpr int kElements = fragment<Use, 16, 16, 16, T, Layout>::num_elements;
  const layout_t layout = std::is_same_v<Layout, row_major> ? mem_row_major : mem_col_major;
  ::simt::detail::WmmaMemoryParcel parcel{mptr, ldm, layout, f.x};
  ::simt::detail::warp_collective(
      ::simt::detail::kWmmaLoad<T, kElements, ::simt::detail::wmma_role<Use>()>, &parcel, where);
}

template <typename T>
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, T>& f, const T* mptr, unsigned ldm,
                             layout_t layout, TS_SIMT_CALLER_PLACE) {
  ::simt::detail::WmmaMemoryParcel parcel{mptr, ldm, layout, f.x};
  ::simt::detail::warp_collective(
      ::simt::detail::kWmmaLoad<T, 8, ::simt::detail::WmmaRole::accumulator>, &parcel, where);
}

template <typename T>
inline void store_matrix_sync(T* mptr, const fragment<accumulator, 16, 16, 16, T>& f, unsigned ldm,
                              layout_t layout, TS_SIMT_CALLER_PLACE) {
  ::simt::detail::WmmaMemoryParcel parcel{mptr, ldm, layout, const_cast<T*>(f.x)};
  ::simt::detail::warp_collective(::simt::detail::kWmmaStore<T>, &parcel, where);
}

template <typename Input, typename LayoutA, typename LayoutB, typename AccumulatorIn,
          typename AccumulatorOut>
inline void mma_sync(fragment<accumulator, 16, 16, 16, AccumulatorOut>& d,
                     const fragment<matrix_a, 16, 16, 16, Input, LayoutA>& a,
                     const fragment<matrix_b, 16, 16, 16, Input, LayoutB>& b,
                     const fragment<accumulator, 16, 16, 16, AccumulatorIn>& c,
                     TS_SIMT_CALLER_PLACE) {
  static_assert(std::is_same_v<Input, __half> ||
                    (std::is_same_v<AccumulatorIn, float> && std::is_same_v<AccumulatorOut, float>),
                "__nv_bfloat16 inputs accumulate in float (as in CUDA)");
  ::simt::detail::WmmaMmaParcel parcel{a.x, b.x, c.x, d.x};
  ::simt::detail::warp_collective(::simt::detail::kWmmaMma<Input, AccumulatorIn, AccumulatorOut>,
                                  &parcel, where);
}

}  // namespace nvcuda::wmma
