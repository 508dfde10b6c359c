// <cuda_fp16.h> on tilescope's CPU path: CUDA's own header (host-compilable: __half and its
// operators), then what it declares only for device code (half_intrinsics.h: __hfma, hexp,
// h2 math...) and the rest of the kernel API.
#pragma once

#include_next <cuda_fp16.h>

#include "instrumentation/simt/cuda_compat.h"
