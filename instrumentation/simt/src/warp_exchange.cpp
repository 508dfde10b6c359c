// Warp exchanges: shuffles, votes, matches, reductions and __syncwarp.
//
// Lanes that call a warp operation with the same (present-lane) mask join one exchange; the
// last to arrive computes every lane's result and releases them all. Lanes with disjoint masks
// may run separate exchanges at once (divergent branches each reducing their half-warp).
// A lane whose mask or operation conflicts with an exchange it must take part in, and that
// already holds lanes it needs, can never proceed: that is reported at once as a disagreement.
#include <algorithm>
#include <cstdint>

#include "instrumentation/simt/src/block_run.h"
#include "instrumentation/simt/src/diagnostics.h"

namespace simt::detail {

namespace {

uint64_t poison_bits(unsigned bytes) {
  return bytes >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
}

// shfl.sync's source lane for `lane` (PTX ISA, "shfl.sync"); `lane` itself when the source
// falls outside the lane's segment for up/down/xor.
unsigned shuffle_source(WarpOp op, unsigned lane, int lane_arg, int width) {
  const unsigned segment_mask = static_cast<unsigned>(32 - width) & 31u;
  const int64_t min_lane = lane & segment_mask;
  const int64_t max_lane = min_lane | (31u & ~segment_mask);
  const int64_t b = static_cast<uint32_t>(lane_arg);
  int64_t source = lane;
  bool in_segment = true;
  switch (op) {
    case WarpOp::shfl_idx: source = min_lane | (b & 31 & ~static_cast<int64_t>(segment_mask)); break;
    case WarpOp::shfl_up: source = lane - b; in_segment = source >= min_lane; break;
    case WarpOp::shfl_down: source = lane + b; in_segment = source <= max_lane; break;
    case WarpOp::shfl_xor: source = lane ^ b; in_segment = source <= max_lane; break;
    default: break;
  }
  return in_segment ? static_cast<unsigned>(source) : lane;
}

}  // namespace

uint64_t BlockRun::warp_exchange(const WarpRequest& request, const SourcePlace& where) {
  SimtThread& self = *running_;
  WarpState& warp = warps_[self.warp];
  const unsigned bit = 1u << self.lane;
  const auto who = [&] {
    return thread_text(self.coordinates.thread_idx, coordinates_.block_idx) + " (lane " +
           std::to_string(self.lane) + " of warp " + std::to_string(self.warp) + ")";
  };
  const std::string call = std::string(warp_op_name(request.op)) + "(mask " + mask_text(request.mask) + ")";

  if ((request.mask & bit) == 0) {
    fail(who() + " called " + call + " at " + place_text(where) +
         ", but the mask omits the calling lane");
  }
  if (is_shuffle(request.op) &&
      (request.width < 1 || request.width > 32 || (request.width & (request.width - 1)) != 0)) {
    fail(who() + " called " + call + " at " + place_text(where) + " with width " +
         std::to_string(request.width) + ": width must be a power of two from 1 to 32");
  }
  const unsigned mask = request.mask & warp.present;
  if ((mask & warp.exited) != 0) {
    fail(who() + " called " + call + " at " + place_text(where) + ", but lanes " +
         mask_text(mask & warp.exited) + " named in the mask have exited and can never take part");
  }

  unsigned joined = warp.pending_count;
  for (unsigned i = 0; i < warp.pending_count; ++i) {
    const PendingExchange& p = warp.pending[i];
    if (p.mask == mask) {
      if (p.op != request.op || p.value_bytes != request.value_bytes) {
        fail("warp lanes disagree on the operation: " + who() + " called " + call + " at " +
             place_text(where) + " while lanes " + mask_text(p.arrived) + " wait in " +
             warp_op_name(p.op) + "(mask " + mask_text(p.mask) + ") at " + place_text(p.where) +
             (p.op == request.op ? " with a value of another size" : ""));
      }
      joined = i;
    } else if ((p.mask & bit) != 0 && (p.arrived & mask) != 0) {
      fail("warp lanes disagree on the mask: " + who() + " called " + call + " at " +
           place_text(where) + " while lanes " + mask_text(p.arrived) + " wait for it in " +
           warp_op_name(p.op) + "(mask " + mask_text(p.mask) + ") at " + place_text(p.where));
    }
  }
  if (joined == warp.pending_count) {
    warp.pending[warp.pending_count++] = PendingExchange{request.op, request.value_bytes, mask, 0, where};
  }

  self.request = request;
  self.request.mask = mask;
  self.phase = ThreadPhase::in_warp_op;
  self.wait_where = where;
  PendingExchange& exchange = warp.pending[joined];
  exchange.arrived |= bit;
  if (exchange.arrived == mask) complete_exchange(warp, self.warp, joined);
  wait_for_release(self);
  return self.warp_result;
}

void BlockRun::complete_exchange(WarpState& warp, unsigned warp_index, unsigned pending_index) {
  const PendingExchange exchange = warp.pending[pending_index];
  warp.pending[pending_index] = warp.pending[--warp.pending_count];
  SimtThread* lanes = &threads_[warp_index * 32];
  const unsigned mask = exchange.mask;
  const auto each_lane = [mask](auto&& fn) {
    for (unsigned m = mask; m != 0; m &= m - 1) fn(static_cast<unsigned>(__builtin_ctz(m)));
  };

  if (is_shuffle(exchange.op)) {
    const uint64_t poison = poison_bits(exchange.value_bytes);
    each_lane([&](unsigned lane) {
      const WarpRequest& r = lanes[lane].request;
      const unsigned source = shuffle_source(exchange.op, lane, r.lane_arg, r.width);
      lanes[lane].warp_result = ((mask >> source) & 1u) != 0 ? lanes[source].request.value : poison;
    });
  } else if (exchange.op == WarpOp::match_any || exchange.op == WarpOp::match_all) {
    bool all_equal = true;
    const uint64_t first = lanes[__builtin_ctz(mask)].request.value;
    each_lane([&](unsigned lane) { all_equal = all_equal && lanes[lane].request.value == first; });
    each_lane([&](unsigned lane) {
      if (exchange.op == WarpOp::match_all) {
        lanes[lane].warp_result = all_equal ? (uint64_t{1} << 32) | mask : 0;
        return;
      }
      unsigned same = 0;
      each_lane([&](unsigned other) {
        if (lanes[other].request.value == lanes[lane].request.value) same |= 1u << other;
      });
      lanes[lane].warp_result = same;
    });
  } else {
    // Votes and reductions: one result for every lane.
    uint64_t result = 0;
    unsigned ballot = 0;
    uint32_t sum = 0, bits_and = ~0u, bits_or = 0, bits_xor = 0;
    uint32_t umin = ~0u, umax = 0;
    int32_t smin = INT32_MAX, smax = INT32_MIN;
    each_lane([&](unsigned lane) {
      const uint64_t v = lanes[lane].request.value;
      const auto u = static_cast<uint32_t>(v);
      const auto s = static_cast<int32_t>(u);
      if (v != 0) ballot |= 1u << lane;
      sum += u;
      bits_and &= u;
      bits_or |= u;
      bits_xor ^= u;
      umin = std::min(umin, u);
      umax = std::max(umax, u);
      smin = std::min(smin, s);
      smax = std::max(smax, s);
    });
    switch (exchange.op) {
      case WarpOp::ballot: result = ballot; break;
      case WarpOp::any: result = ballot != 0; break;
      case WarpOp::all: result = ballot == mask; break;
      case WarpOp::reduce_add: result = sum; break;
      case WarpOp::reduce_min_unsigned: result = umin; break;
      case WarpOp::reduce_max_unsigned: result = umax; break;
      case WarpOp::reduce_min_signed: result = static_cast<uint32_t>(smin); break;
      case WarpOp::reduce_max_signed: result = static_cast<uint32_t>(smax); break;
      case WarpOp::reduce_and: result = bits_and; break;
      case WarpOp::reduce_or: result = bits_or; break;
      case WarpOp::reduce_xor: result = bits_xor; break;
      default: break;  // __syncwarp: no result
    }
    each_lane([&](unsigned lane) { lanes[lane].warp_result = result; });
  }

  unsigned count = 0;
  each_lane([&](unsigned lane) { release_scratch_[count++] = warp_index * 32 + lane; });
  release(release_scratch_.data(), count);
}

unsigned BlockRun::active_lanes() const {
  const WarpState& warp = warps_[running_->warp];
  return warp.present & ~warp.exited;
}

}  // namespace simt::detail
