#include "kernels/kernel_stages.h"

#include "kernels/kernel_smem.h"

namespace ts {

std::vector<StageInfo> kernel_stage_table(KernelKind kernel) {
  if (kernel == KernelKind::fa1)
    return {{"fa1.step", StageKind::state, 0}, {"final", StageKind::final, 0}};
  if (kernel == KernelKind::fa2)
    return {{"fa2.step", StageKind::state, 0, /*p_rounded=*/true, /*exp2_folded=*/true}, {"final", StageKind::final, 0}};
  if (kernel == KernelKind::splitk2)
    return {{"splitk2.tile", StageKind::state, 0, /*p_rounded=*/true, /*exp2_folded=*/true},
            {"splitk2.partial", StageKind::state, 0, /*p_rounded=*/true, /*exp2_folded=*/true},
            {"splitk.reduce", StageKind::merge, 1, /*p_rounded=*/true, /*exp2_folded=*/true},
            {"final", StageKind::final, 1}};
  return {{"splitk.tile", StageKind::state, 0},
          {"splitk.partial", StageKind::state, 0},
          {"splitk.reduce", StageKind::merge, 1},
          {"final", StageKind::final, 1}};
}

std::vector<StageInfo> kernel_stage_table(const AttentionConfig& config) {
  std::vector<StageInfo> stages = kernel_stage_table(config.kernel);
  // A faulty build is the one a run with a fault gets (launch_plan.h, variant_for).
  if (config.kernel == KernelKind::splitk &&
      splitk_decode_on_tensor_cores(static_cast<int>(config.head_dim), static_cast<int>(dtype_size(config.dtype)),
                                    splitk_block_m(config.seq_q), config.fault != Fault::none))
    for (StageInfo& s : stages)
      if (s.kind != StageKind::final) s.p_rounded = true;
  return stages;
}

}  // namespace ts
