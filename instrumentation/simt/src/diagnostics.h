// Wording of the runtime's failure reports: CUDA coordinates "(x,y,z)", source places
// "file:line", warp operation names and masks, and the deadlock summary. Every report names
// the block, the thread(s) and the kernel's source location.
#pragma once

#include "instrumentation/simt/kernel_api/source_place.h"
#include <string>

#include "instrumentation/simt/kernel_api/runtime_hooks.h"

namespace simt::detail {

std::string coordinates_text(const uint3& c);
std::string place_text(const SourcePlace& where);
std::string mask_text(unsigned mask);
const char* warp_op_name(WarpOp op);
bool is_shuffle(WarpOp op);
// Two barrier calls from the same place in the source.
bool same_place(const SourcePlace& a, const SourcePlace& b);
// "thread (3,0,0) of block (1,0,0)"
std::string thread_text(const uint3& thread, const uint3& block);

}  // namespace simt::detail
