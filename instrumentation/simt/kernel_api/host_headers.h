// Everything the host build of a kernel includes from outside tilescope, included here first.
//
// Why first: the qualifier macros (qualifiers.h) redefine names such as __noinline__ that
// libstdc++ itself uses inside attributes (`__attribute__((__noinline__))`). Including the
// standard headers before those macros exist means their include guards keep the macros out.
// CUDA's host-compilable headers come in as system headers (ts_cuda_headers) so their
// warnings do not break -Werror builds.
#pragma once

#include <math.h>  // the unqualified ::isnan, ::fmaxf... kernels call as on a GPU
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include "instrumentation/simt/kernel_api/source_place.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_functions.h>
#include <vector_types.h>
