// Warp exchanges: shuffles, votes, matches, reductions and __syncwarp.
//
// Lanes that call a warp operation with the same mask (of lanes that exist and have not
// exited: CUDA's "non-exited threads named in mask") join one exchange; the
// last to arrive computes every lane's result and releases them all. Lanes with disjoint masks
// may run separate exchanges at once (divergent branches each reducing their half-warp).
// A lane whose mask or operation conflicts with an exchange it must take part in, and that
// already holds lanes it needs, can never proceed: that is reported at once as a disagreement.
#include <algorithm>
#include <cstdint>

#include "instrumentation/simt/src/block_run.h"
#include "instrumentation/simt/src/diagnostics.h"
#include "instrumentation/simt/src/worker_context.h"

namespace simt::detail {

namespace {

uint64_t poison_bits(unsigned bytes) {
  return bytes >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
}

// shfl.sync's source lane for `lane` (PTX ISA, "shfl.sync"); `lane` itself when the source
// falls outside the lane's segment for up/down/xor. A template, so that the completing lane's
// loop over 32 lanes has no switch inside.
template <WarpOp kOp>
unsigned shuffle_source(unsigned lane, int lane_arg, unsigned width) {
  const unsigned segment_mask = (32u - width) & 31u;
  const int64_t min_lane = lane & segment_mask;
  const int64_t max_lane = min_lane | (31u & ~segment_mask);
  const int64_t b = static_cast<uint32_t>(lane_arg);
  int64_t source = lane;
  bool in_segment = true;
  if constexpr (kOp == WarpOp::shfl_idx) {
    source = min_lane | (b & 31 & ~static_cast<int64_t>(segment_mask));
  } else if constexpr (kOp == WarpOp::shfl_up) {
    source = lane - b;
    in_segment = source >= min_lane;
  } else if constexpr (kOp == WarpOp::shfl_down) {
    source = lane + b;
    in_segment = source <= max_lane;
  } else {
    source = lane ^ b;
    in_segment = source <= max_lane;
  }
  return in_segment ? static_cast<unsigned>(source) : lane;
}

template <WarpOp kOp>
void shuffle_results(WarpState& warp, unsigned mask, uint64_t poison) {
  for (unsigned m = mask; m != 0; m &= m - 1) {
    const auto lane = static_cast<unsigned>(__builtin_ctz(m));
    const unsigned source =
        shuffle_source<kOp>(lane, warp.shuffle_args[lane], warp.shuffle_widths[lane]);
    warp.results[lane] = ((mask >> source) & 1u) != 0 ? warp.values[source] : poison;
  }
}

}  // namespace

std::string BlockRun::lane_text(const SimtThread& self) const {
  return thread_text(self.coordinates.thread_idx, coordinates_.block_idx) + " (lane " +
         std::to_string(self.lane) + " of warp " + std::to_string(self.warp) + ")";
}

void BlockRun::fail_warp_call(const SimtThread& self, WarpOpKind kind, unsigned requested_mask,
                              int width, const SourcePlace& where, WarpCallProblem problem) {
  std::string text = lane_text(self) + " called " + warp_op_name(kind.op) + "(mask " +
                     mask_text(requested_mask) + ") at " + place_text(where);
  switch (problem) {
    case WarpCallProblem::mask_omits_caller: text += ", but the mask omits the calling lane"; break;
    case WarpCallProblem::bad_width:
      text +=
          " with width " + std::to_string(width) + ": width must be a power of two from 1 to 32";
      break;
  }
  fail(text);
}

void BlockRun::fail_warp_disagreement(const SimtThread& self, WarpOpKind kind,
                                      const WarpCollective* collective, unsigned requested_mask,
                                      const SourcePlace& where, const PendingExchange& waiting) {
  const WarpState& warp = warps_[self.warp];
  const bool same_mask = waiting.mask == (requested_mask & warp.present & ~warp.exited);
  const bool same_operation = waiting.op == kind.op && waiting.collective == collective;
  fail(std::string("warp lanes disagree on the ") + (same_mask ? "operation: " : "mask: ") +
       lane_text(self) + " called " + exchange_name(kind.op, collective) + "(mask " +
       mask_text(requested_mask) + ") at " + place_text(where) + " while lanes " +
       mask_text(waiting.arrived) + " wait for it in " +
       exchange_name(waiting.op, waiting.collective) + "(mask " + mask_text(waiting.mask) +
       ") at " + place_text(waiting.where) +
       (same_mask && same_operation ? " with a value of another size" : ""));
}

unsigned BlockRun::find_exchange(WarpState& warp, const SimtThread& self, WarpOpKind kind,
                                 const WarpCollective* collective, unsigned requested_mask,
                                 unsigned mask, const SourcePlace& where) {
  const unsigned bit = 1u << self.lane;
  unsigned joined = warp.pending_count;
  for (unsigned i = 0; i < warp.pending_count; ++i) {
    const PendingExchange& p = warp.pending[i];
    if (p.mask == mask) {
      if (p.op != kind.op || p.value_bytes != kind.value_bytes || p.collective != collective) {
        fail_warp_disagreement(self, kind, collective, requested_mask, where, p);
      }
      joined = i;
    } else if ((p.mask & bit) != 0 && (p.arrived & mask) != 0) {
      fail_warp_disagreement(self, kind, collective, requested_mask, where, p);
    }
  }
  if (joined == warp.pending_count) {
    warp.pending[warp.pending_count++] =
        PendingExchange{kind.op, kind.value_bytes, mask, 0, where, collective};
  }
  return joined;
}

// Inline into the hook below, its only caller: one call from kernel code, arguments in registers.
[[gnu::always_inline]] inline uint64_t BlockRun::warp_exchange(WarpOpKind kind,
                                                               unsigned requested_mask,
                                                               uint64_t value, int lane_arg,
                                                               int width,
                                                               const SourcePlace& where) {
  if (stopping_) [[unlikely]] {
    stop_call();
    return 0;
  }
  SimtThread& self = *running_;
  WarpState& warp = warps_[self.warp];
  const unsigned bit = 1u << self.lane;
  if ((requested_mask & bit) == 0) {
    fail_warp_call(self, kind, requested_mask, width, where, WarpCallProblem::mask_omits_caller);
  }
  if (is_shuffle(kind.op) &&
      (static_cast<unsigned>(width - 1) > 31u || (width & (width - 1)) != 0)) {
    fail_warp_call(self, kind, requested_mask, width, where, WarpCallProblem::bad_width);
  }
  // CUDA: "all non-exited threads named in mask" take part; lanes past a partial last warp
  // count as exited.
  const unsigned mask = requested_mask & warp.present & ~warp.exited;

  // Almost always one exchange is open and this lane joins it.
  unsigned joined = 0;
  const PendingExchange& open = warp.pending[0];
  if (warp.pending_count != 1 || open.mask != mask || open.op != kind.op ||
      open.value_bytes != kind.value_bytes) [[unlikely]] {
    joined = find_exchange(warp, self, kind, nullptr, requested_mask, mask, where);
  }

  const unsigned lane = self.lane;
  warp.values[lane] = value;
  warp.shuffle_args[lane] = lane_arg;
  warp.shuffle_widths[lane] = static_cast<uint8_t>(width);  // checked above for shuffles
  self.phase = ThreadPhase::in_warp_op;
  PendingExchange& exchange = warp.pending[joined];
  exchange.arrived |= bit;
  if (exchange.arrived == mask) complete_exchange(warp, self.warp, joined);
  wait_for_release(self);
  return warp.results[lane];
}

uint64_t warp_exchange(WarpOpKind kind, unsigned mask, uint64_t value, int lane_arg, int width,
                       const SourcePlace& where) {
  if (active_block_run == nullptr) [[unlikely]]
    throw_outside_launch(warp_op_name(kind.op), where);
  return active_block_run->warp_exchange(kind, mask, value, lane_arg, width, where);
}

void BlockRun::complete_exchange(WarpState& warp, unsigned warp_index, unsigned pending_index) {
  const PendingExchange exchange = warp.pending[pending_index];
  warp.pending[pending_index] = warp.pending[--warp.pending_count];
  const unsigned mask = exchange.mask;
  const auto each_lane = [mask](auto&& fn) {
    for (unsigned m = mask; m != 0; m &= m - 1) fn(static_cast<unsigned>(__builtin_ctz(m)));
  };

  if (exchange.op == WarpOp::collective) {
    // Every lane's value is its parcel; the collective writes every lane's results through them.
    void* parcels[32];
    for (unsigned lane = 0; lane < 32; ++lane) {
      parcels[lane] = reinterpret_cast<void*>(static_cast<uintptr_t>(warp.values[lane]));
    }
    const std::string problem = exchange.collective->complete(parcels);
    if (!problem.empty()) fail_collective_operands(warp_index, exchange, problem);
  } else if (is_shuffle(exchange.op)) {
    const uint64_t poison = poison_bits(exchange.value_bytes);
    switch (exchange.op) {
      case WarpOp::shfl_idx: shuffle_results<WarpOp::shfl_idx>(warp, mask, poison); break;
      case WarpOp::shfl_up: shuffle_results<WarpOp::shfl_up>(warp, mask, poison); break;
      case WarpOp::shfl_down: shuffle_results<WarpOp::shfl_down>(warp, mask, poison); break;
      default: shuffle_results<WarpOp::shfl_xor>(warp, mask, poison); break;
    }
  } else if (exchange.op == WarpOp::match_any || exchange.op == WarpOp::match_all) {
    bool all_equal = true;
    const uint64_t first = warp.values[__builtin_ctz(mask)];
    each_lane([&](unsigned lane) { all_equal = all_equal && warp.values[lane] == first; });
    each_lane([&](unsigned lane) {
      if (exchange.op == WarpOp::match_all) {
        warp.results[lane] = all_equal ? (uint64_t{1} << 32) | mask : 0;
        return;
      }
      unsigned same = 0;
      each_lane([&](unsigned other) {
        if (warp.values[other] == warp.values[lane]) same |= 1u << other;
      });
      warp.results[lane] = same;
    });
  } else {
    // Votes and reductions: one result for every lane.
    uint64_t result = 0;
    unsigned ballot = 0;
    uint32_t sum = 0, bits_and = ~0u, bits_or = 0, bits_xor = 0;
    uint32_t umin = ~0u, umax = 0;
    int32_t smin = INT32_MAX, smax = INT32_MIN;
    each_lane([&](unsigned lane) {
      const uint64_t v = warp.values[lane];
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
    each_lane([&](unsigned lane) { warp.results[lane] = result; });
  }

  release_lanes(warp_index, mask);
}

unsigned BlockRun::active_lanes() const {
  const WarpState& warp = warps_[running_->warp];
  return warp.present & ~warp.exited;
}

}  // namespace simt::detail
