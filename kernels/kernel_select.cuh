// Picks the instantiation of a kernel template for a run-time head dim and variant. Included
// by the generated per-(stage, dtype) translation units of both backends (see
// kernels/CMakeLists.txt); each instantiates only its own stage and dtype.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "kernels/attention_params.h"
#include "kernels/kernel_registry.h"

namespace ts::kernel_select {

// kDims: the head dims to instantiate (all that fa1 and splitk support by default); nullptr
// for any other.
template <template <int, KernelVariant> class Kernel, int... kDims>
AttentionKernel by_variant_and_dim(int head_dim, KernelVariant variant) {
  auto pick = [&](auto dim) -> AttentionKernel {
    constexpr int kD = decltype(dim)::value;
    switch (variant) {
      case KernelVariant::plain: return Kernel<kD, KernelVariant::plain>::get();
      case KernelVariant::traced: return Kernel<kD, KernelVariant::traced>::get();
      case KernelVariant::faulty: return Kernel<kD, KernelVariant::faulty>::get();
    }
    return nullptr;
  };
  if constexpr (sizeof...(kDims) > 0) {
    AttentionKernel found = nullptr;
    ((head_dim == kDims ? (found = pick(std::integral_constant<int, kDims>{}), 0) : 0), ...);
    return found;
  } else {
    switch (head_dim) {
      case 32: return pick(std::integral_constant<int, 32>{});
      case 64: return pick(std::integral_constant<int, 64>{});
      case 128: return pick(std::integral_constant<int, 128>{});
      case 256: return pick(std::integral_constant<int, 256>{});
      default: return nullptr;
    }
  }
}

template <template <int, KernelVariant> class Kernel>
AttentionKernel by_variant(KernelVariant variant) {
  switch (variant) {
    case KernelVariant::plain: return Kernel<0, KernelVariant::plain>::get();
    case KernelVariant::traced: return Kernel<0, KernelVariant::traced>::get();
    case KernelVariant::faulty: return Kernel<0, KernelVariant::faulty>::get();
  }
  return nullptr;
}

}  // namespace ts::kernel_select
