#include "kernels/kernel_stages.h"

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

}  // namespace ts
