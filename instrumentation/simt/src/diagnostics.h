// Wording of the runtime's failure reports: CUDA coordinates "(x,y,z)", source places
// "file:line", warp operation names and masks, and the deadlock summary. Every report names
// the block, the thread(s) and the kernel's source location.
#pragma once

#include <cstring>
#include <string>
#include "instrumentation/simt/kernel_api/source_place.h"

#include "instrumentation/simt/kernel_api/runtime_hooks.h"

namespace simt::detail {

std::string coordinates_text(const uint3& c);
std::string place_text(const SourcePlace& where);
std::string mask_text(unsigned mask);
const char* warp_op_name(WarpOp op);
// warp_op_name, or the collective's own name ("mma.sync.aligned...") for WarpOp::collective.
inline const char* exchange_name(WarpOp op, const WarpCollective* collective) {
  return collective != nullptr ? collective->name : warp_op_name(op);
}
// "lanes 3, 17" / "lane 3" / "lanes 0-31": the lanes of a warp mask, for reports.
std::string lane_list(unsigned mask);
inline bool is_shuffle(WarpOp op) { return op >= WarpOp::shfl_idx && op <= WarpOp::shfl_xor; }
// Two barrier calls from the same place in the source (inline: every barrier asks).
inline bool same_place(const SourcePlace& a, const SourcePlace& b) {
  // Fast path: the same call site gives a bitwise-identical location (GCC's is one pointer).
  if (std::memcmp(&a, &b, sizeof(SourcePlace)) == 0) return true;
  return a.line() == b.line() && a.column() == b.column() &&
         (a.file_name() == b.file_name() || std::strcmp(a.file_name(), b.file_name()) == 0);
}
// "thread (3,0,0) of block (1,0,0)"
std::string thread_text(const uint3& thread, const uint3& block);

}  // namespace simt::detail
