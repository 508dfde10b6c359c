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

// A stage whose traced build is two kernels (FA-1, FA-2 and the Split-K partial: fa2_forward.cuh's
// fa2_forward_kernel says why) has a recording kernel: find_kernel(..., traced) gives the kernel
// that runs the blocks recording nothing, with the plain build's code, its other blocks returning
// at once; find_recording_kernel gives the one that runs the blocks recording an event, with the
// traced build's code, the others returning. A traced launch runs both over the same grid (the
// GPU side by side, in two streams), or only the one whose blocks all run (PlannedKernel's
// runs_recording_kernel and runs_other_kernel, from the plan's slot table). For any other stage
// find_recording_kernel is nullptr and the traced build is one kernel. Where none of a kernel's
// blocks records, the plan has it launch the plain build instead (PlannedKernel::variant).
namespace cpu {
// nullptr for a (stage, dtype, head dim) that kernels/kernel_list.cmake does not list.
AttentionKernel find_kernel(KernelStage stage, DType dtype, int head_dim, KernelVariant variant);
AttentionKernel find_recording_kernel(KernelStage stage, DType dtype, int head_dim);
}  // namespace cpu

namespace gpu {
// Only defined when built with CUDA (TILESCOPE_HAVE_CUDA).
AttentionKernel find_kernel(KernelStage stage, DType dtype, int head_dim, KernelVariant variant);
AttentionKernel find_recording_kernel(KernelStage stage, DType dtype, int head_dim);
}  // namespace gpu

}  // namespace ts
