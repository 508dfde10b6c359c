// <cooperative_groups.h> on tilescope's CPU path: not supported by the SIMT runtime.
#pragma once

#error "tilescope CPU path: cooperative groups (<cooperative_groups.h>) are not supported by the SIMT runtime; use __syncthreads, __syncwarp and the __shfl_*_sync / __ballot_sync / __reduce_*_sync warp operations (instrumentation/simt/README.md lists what kernels can rely on)"
