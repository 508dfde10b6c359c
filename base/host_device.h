// TS_HOST_DEVICE marks small functions shared by the kernels and the host code (tiling,
// launchers, reference): __host__ __device__ under nvcc, nothing for the host compiler (the
// SIMT runtime runs kernels as host code, so host functions are already callable there).
#pragma once

#if defined(__CUDACC__)
#define TS_HOST_DEVICE __host__ __device__
#else
#define TS_HOST_DEVICE
#endif
