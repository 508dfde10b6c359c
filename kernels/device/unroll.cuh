// Loop-unrolling hints that both compilers understand: `#pragma unroll` for nvcc, `#pragma GCC
// unroll` for the host build (GCC and Clang), which otherwise warns about the unknown pragma
// and would leave the small fixed loops over register tiles rolled.
#pragma once

#define TS_PRAGMA(x) _Pragma(#x)
#if defined(__CUDACC__)
#define TS_UNROLL TS_PRAGMA(unroll)
#define TS_UNROLL_N(n) TS_PRAGMA(unroll n)
#else
#define TS_UNROLL TS_PRAGMA(GCC unroll 32)
#define TS_UNROLL_N(n) TS_PRAGMA(GCC unroll n)
#endif
