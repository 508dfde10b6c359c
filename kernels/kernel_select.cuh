// Picks the instantiation of a kernel template for a run-time head dim and variant. Included
// by the generated per-(stage, dtype) translation units of both backends
// (kernels/instantiate/kernel_table.inc); each instantiates only its own stage and dtype, for
// the head dims kernels/kernel_list.cmake lists.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "kernels/attention_params.h"
#include "kernels/kernel_registry.h"

namespace ts::kernel_select {

template <template <int, KernelVariant> class Kernel, int kD>
AttentionKernel by_variant_at(KernelVariant variant) {
  switch (variant) {
    case KernelVariant::plain: return Kernel<kD, KernelVariant::plain>::get();
    case KernelVariant::traced: return Kernel<kD, KernelVariant::traced>::get();
    case KernelVariant::faulty: return Kernel<kD, KernelVariant::faulty>::get();
  }
  return nullptr;
}

// Kernel<kD, variant> for the head dim among kDims (each instantiated); nullptr for any other.
template <template <int, KernelVariant> class Kernel, int... kDims>
AttentionKernel by_variant_and_dim(int head_dim, KernelVariant variant) {
  static_assert(sizeof...(kDims) > 0, "a unit instantiates at least one head dim");
  AttentionKernel found = nullptr;
  ((head_dim == kDims ? (found = by_variant_at<Kernel, kDims>(variant), 0) : 0), ...);
  return found;
}

// A kernel whose head dim is a run-time value (Kernel<0, variant>), handed out for the head dims
// among kDims; nullptr for any other.
template <template <int, KernelVariant> class Kernel, int... kDims>
AttentionKernel by_variant_for_dims(int head_dim, KernelVariant variant) {
  static_assert(sizeof...(kDims) > 0, "a unit serves at least one head dim");
  return ((head_dim == kDims) || ...) ? by_variant_at<Kernel, 0>(variant) : nullptr;
}

// Kernel<kD, traced>::recording() for the head dim among kDims; nullptr for any other (and where
// the stage has no recording kernel).
template <template <int, KernelVariant> class Kernel, int... kDims>
AttentionKernel recording_by_dim(int head_dim) {
  AttentionKernel found = nullptr;
  ((head_dim == kDims ? (found = Kernel<kDims, KernelVariant::traced>::recording(), 0) : 0), ...);
  return found;
}

}  // namespace ts::kernel_select
