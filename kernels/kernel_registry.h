// Which compiled kernel runs a stage of a launch: one function pointer per (stage, dtype,
// head dim, variant), for each backend. The kernels are instantiated in several translation
// units per backend (one per stage and dtype, generated from kernels/kernel_list.cmake by
// cmake/TilescopeKernelList.cmake) so that the build runs them in parallel; this header only
// declares the look-ups.
//
// A CPU pointer is run with simt::launch, a GPU pointer with cudaLaunchKernel; both take the
// AttentionParams by value.
#pragma once

#include "base/attention_config.h"
#include "kernels/attention_params.h"

namespace ts {

using AttentionKernel = void (*)(AttentionParams);

enum class KernelStage : int32_t { fa1 = 0, splitk_partial = 1, splitk_reduce = 2, fa2 = 3, splitk2_partial = 4 };

const char* kernel_stage_name(KernelStage stage);  // "fa1_forward", "splitk_partial", ...

namespace cpu {
// nullptr for a (stage, dtype, head dim) that kernels/kernel_list.cmake does not list.
AttentionKernel find_kernel(KernelStage stage, DType dtype, int head_dim, KernelVariant variant);
}  // namespace cpu

namespace gpu {
// Only defined when built with CUDA (TILESCOPE_HAVE_CUDA).
AttentionKernel find_kernel(KernelStage stage, DType dtype, int head_dim, KernelVariant variant);
}  // namespace gpu

}  // namespace ts
