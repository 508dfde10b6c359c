#include "instrumentation/simt/src/diagnostics.h"

#include <cstdio>
#include <cstring>

namespace simt::detail {

std::string coordinates_text(const uint3& c) {
  return "(" + std::to_string(c.x) + "," + std::to_string(c.y) + "," + std::to_string(c.z) + ")";
}

std::string place_text(const SourcePlace& where) {
  return std::string(where.file_name()) + ":" + std::to_string(where.line());
}

std::string mask_text(unsigned mask) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", mask);
  return text;
}

const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::sync: return "__syncwarp";
    case WarpOp::shfl_idx: return "__shfl_sync";
    case WarpOp::shfl_up: return "__shfl_up_sync";
    case WarpOp::shfl_down: return "__shfl_down_sync";
    case WarpOp::shfl_xor: return "__shfl_xor_sync";
    case WarpOp::ballot: return "__ballot_sync";
    case WarpOp::any: return "__any_sync";
    case WarpOp::all: return "__all_sync";
    case WarpOp::match_any: return "__match_any_sync";
    case WarpOp::match_all: return "__match_all_sync";
    case WarpOp::reduce_add: return "__reduce_add_sync";
    case WarpOp::reduce_min_unsigned:
    case WarpOp::reduce_min_signed: return "__reduce_min_sync";
    case WarpOp::reduce_max_unsigned:
    case WarpOp::reduce_max_signed: return "__reduce_max_sync";
    case WarpOp::reduce_and: return "__reduce_and_sync";
    case WarpOp::reduce_or: return "__reduce_or_sync";
    case WarpOp::reduce_xor: return "__reduce_xor_sync";
    case WarpOp::collective: return "warp collective";
  }
  return "warp operation";
}

std::string lane_list(unsigned mask) {
  std::string text;
  unsigned count = 0;
  for (unsigned lane = 0; lane < 32;) {
    if (((mask >> lane) & 1u) == 0) {
      ++lane;
      continue;
    }
    unsigned last = lane;
    while (last + 1 < 32 && ((mask >> (last + 1)) & 1u) != 0) ++last;
    if (!text.empty()) text += ", ";
    text += std::to_string(lane);
    if (last > lane) text += "-" + std::to_string(last);
    count += last - lane + 1;
    lane = last + 1;
  }
  return (count == 1 ? "lane " : "lanes ") + text;
}

std::string thread_text(const uint3& thread, const uint3& block) {
  return "thread " + coordinates_text(thread) + " of block " + coordinates_text(block);
}

}  // namespace simt::detail
