// Which of our kernels is built for which dtypes and head dims, as kernels/kernel_list.cmake
// lists them: the build generates the kernels' instantiation units and their look-up
// (kernels/kernel_registry.h's find_kernel) from that list, and this header from the same list
// (through the generated base/kernel_list_entries.h). What reads it here: the config's
// validation (attention_config.h's validate), the CLI's choices and help, the GUI's launch form.
// A (kernel, dtype, head dim) the list does not hold has no kernel to run.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/attention_config.h"
#include "base/dtype.h"
#include "base/kernel_list_entries.h"  // generated from kernels/kernel_list.cmake

namespace ts {

struct KernelBuild {
  KernelKind kernel;
  DType dtype;
  int head_dim;
  bool operator==(const KernelBuild&) const = default;
};

// Every instantiation, in the list's order (kernels in order; per kernel every dtype, per dtype
// every head dim); a constant for checks at compile time (kernels/kernel_smem.h's).
#define TS_KERNEL_BUILD(kernel, dtype, head_dim) KernelBuild{KernelKind::kernel, DType::dtype, head_dim},
inline constexpr KernelBuild kKernelBuilds[] = {TS_KERNEL_BUILDS(TS_KERNEL_BUILD)};
#undef TS_KERNEL_BUILD
std::span<const KernelBuild> kernel_builds();
bool is_built(KernelKind kernel, DType dtype, int64_t head_dim);

// The kernels the list builds, in its order.
std::vector<KernelKind> built_kernels();
// What one kernel is built for, in the list's order; every dtype goes with every head dim.
std::vector<DType> built_dtypes(KernelKind kernel);
std::vector<int> built_head_dims(KernelKind kernel);
// What any kernel is built for: dtypes in base/dtype.h's order, head dims ascending.
std::vector<DType> built_dtypes();
std::vector<int> built_head_dims();

// Why a kernel is built for no other dtypes, or head dims (the list's words; empty when it
// gives none).
std::string_view why_no_other_dtypes(KernelKind kernel);
std::string_view why_no_other_head_dims(KernelKind kernel);

// "fp16/bf16, head dim 64/128": what a kernel is built for, as the CLI's help and the GUI's
// kernel choices show it. kernel_choice_label adds the name and description:
// "fa2 (fa1's pass on tensor cores; fp16/bf16, head dim 64/128)".
std::string built_for_text(KernelKind kernel);
std::string kernel_choice_label(KernelKind kernel);

// Throws ConfigError when the list does not build `kernel` for `dtype` and `head_dim`: field
// "head_dim" for a head dim no kernel is built for ("head_dim must be one of 32, 64, 128 or 256"),
// else field "dtype" or "head_dim" saying what the kernel is built for, why not for others where
// the list says, and which kernels run the value asked for.
void validate_kernel_build(KernelKind kernel, DType dtype, int64_t head_dim);

}  // namespace ts
