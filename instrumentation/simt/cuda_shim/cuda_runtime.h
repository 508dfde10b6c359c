// <cuda_runtime.h> on tilescope's CPU path: a user's kernel source (.cu compiled as C++) and host
// code get the SIMT runtime's kernel API (cuda_compat.h: qualifiers, threadIdx..., barriers,
// warp operations, atomics, intrinsics, __half / __nv_bfloat16), the CUDA runtime API subset
// (cuda_runtime_cpu.h: memory, symbols, streams, events, errors, device properties, launches)
// and TILESCOPE_LAUNCH / TILESCOPE_DYNAMIC_SHARED (tilescope/portable.h). tilescope_add_cpu_executable puts this folder ahead
// of CUDA's headers and includes this file into every .cu source first, as nvcc does.
//
// What the CPU cannot run is refused here at compile time with a message naming it: inline PTX
// (`asm`, below), and, in their own headers of this folder, cooperative groups and the
// pipeline / arrive-wait barrier primitives.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/simt/cuda_runtime_cpu.h"
#include "tilescope/portable.h"

// Inline PTX (`asm(...)`, `asm volatile(...)`) is GPU machine code: the host compiler would pass
// it to the x86 assembler, which fails without naming the source line. A program whose host code
// writes `asm` after this header opts out by defining TILESCOPE_CPU_ALLOW_ASM.
#if !defined(TILESCOPE_CPU_ALLOW_ASM)
#define asm                                                                                    \
  static_assert(false,                                                                         \
                "tilescope CPU path: inline PTX (asm) cannot run on the CPU. Keep it for the " \
                "GPU under #if defined(__CUDA_ARCH__) and give the CPU a C++ version in the "  \
                "#else (TILESCOPE_SIMT_CPU is defined there), or use tilescope's portable "    \
                "forms (instrumentation/simt/README.md: tensor_core.h for mma, ldmatrix, "     \
                "cp.async; wmma.h)");
#endif
