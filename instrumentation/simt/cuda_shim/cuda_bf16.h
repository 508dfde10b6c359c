// <cuda_bf16.h> on tilescope's CPU path: CUDA's own header (host-compilable: __nv_bfloat16 and
// its operators), then what it declares only for device code (half_intrinsics.h) and the rest of
// the kernel API.
#pragma once

#include_next <cuda_bf16.h>

#include "instrumentation/simt/cuda_compat.h"
