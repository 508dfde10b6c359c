// The two backends behind launch_attention (kernels/launcher.h). Internal to ts_launcher:
// callers use launch_attention, which validates the config and the inputs first.
#pragma once

#include <string>

#include "kernels/launcher.h"

namespace ts::detail {

LaunchOutcome launch_on_cpu(const LaunchRequest& request, const AttentionInputs& inputs);

#if defined(TILESCOPE_HAVE_CUDA)
LaunchOutcome launch_on_gpu(const LaunchRequest& request, const AttentionInputs& inputs);
bool cuda_device_present(std::string* reason);
#endif

}  // namespace ts::detail
