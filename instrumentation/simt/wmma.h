// CUDA's warp matrix API, nvcuda::wmma, for both executors: include it (after
// instrumentation/simt/cuda_compat.h) where a kernel would include <mma.h>.
//
// Under nvcc it is <mma.h>. Under the host compiler <mma.h> declares nothing, and this is the
// SIMT runtime's own nvcuda::wmma (kernel_api/wmma.h): the m16n16k16 shape with __half or
// __nv_bfloat16 inputs and float or __half accumulators, with the GPU's num_elements, and the
// misuse CUDA forbids (lanes passing different pointers, misaligned pointers, a lane missing
// from the warp) reported with the kernel's file:line.
#pragma once

#if defined(TILESCOPE_SIMT_CPU)
#include "instrumentation/simt/kernel_api/wmma.h"
#else
#include <mma.h>
#endif
