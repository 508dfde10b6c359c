// <mma.h> on tilescope's CPU path: nvcuda::wmma run by the SIMT runtime (instrumentation/simt/
// wmma.h: m16n16k16 with __half or __nv_bfloat16 inputs, float or __half accumulators).
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/simt/wmma.h"
