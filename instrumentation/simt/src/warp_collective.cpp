// Warp collectives: the .sync.aligned operations of PTX that move more than a shuffle's 8 bytes
// per lane (mma, ldmatrix, wmma loads and stores), as exchanges of all 32 lanes of a warp.
//
// They ride on the warp exchanges of warp_exchange.cpp (one pending exchange per warp, joined
// lane by lane, completed by the last lane to arrive), with PTX's stricter rule instead of
// CUDA's for shuffles: a shuffle waits for the non-exited lanes of its mask, a collective needs
// every lane of the warp. So a partial warp, a lane that has exited, a lane that exits while
// the others wait, and lanes arriving from two places in the source are reported at once;
// a lane that waits elsewhere (a barrier) leaves the warp deadlocked, which is reported too.
#include <cstdint>
#include <string>

#include "instrumentation/simt/src/block_run.h"
#include "instrumentation/simt/src/diagnostics.h"
#include "instrumentation/simt/src/worker_context.h"

namespace simt::detail {

namespace {

constexpr unsigned kWholeWarp = 0xffffffffu;

const char* const kWholeWarpRule =
    ": every one of the 32 lanes of a warp must execute it (.sync.aligned)";

}  // namespace

void BlockRun::fail_collective_without_whole_warp(const SimtThread& self, const WarpCollective& op,
                                                  const SourcePlace& where) {
  const WarpState& warp = warps_[self.warp];
  std::string text = lane_text(self) + " called " + op.name + " at " + place_text(where) + ", but ";
  if (warp.present != kWholeWarp) {
    text += "its warp has only " + std::to_string(__builtin_popcount(warp.present)) +
            " threads (the block's last warp is partial)";
  } else {
    text += lane_list(warp.exited) + " of its warp ha" +
            (__builtin_popcount(warp.exited) == 1 ? "s" : "ve") + " exited";
  }
  fail(text + kWholeWarpRule);
}

void BlockRun::fail_collective_from_two_places(const SimtThread& self, const WarpCollective& op,
                                               const SourcePlace& where,
                                               const PendingExchange& waiting) {
  fail(std::string("warp lanes reached ") + op.name + " from two places: " + lane_text(self) +
       " at " + place_text(where) + " while " + lane_list(waiting.arrived) + " wait at " +
       place_text(waiting.where) + kWholeWarpRule + " (the same instruction)");
}

void BlockRun::fail_collective_operands(unsigned warp, const PendingExchange& exchange,
                                        const std::string& problem) {
  fail(std::string(exchange.collective->name) + " at " + place_text(exchange.where) + " in warp " +
       std::to_string(warp) + " of block " + coordinates_text(coordinates_.block_idx) + ": " +
       problem);
}

void BlockRun::fail_exit_during_collective(const SimtThread& self, const PendingExchange& waiting) {
  record_failure(BlockOutcome::failed, lane_text(self) + " exited while " +
                                           lane_list(waiting.arrived) + " of its warp wait in " +
                                           waiting.collective->name + " at " +
                                           place_text(waiting.where) + kWholeWarpRule);
}

void BlockRun::warp_collective(const WarpCollective& op, void* parcel, const SourcePlace& where) {
  if (stopping_) [[unlikely]] {
    stop_call();
    return;
  }
  SimtThread& self = *running_;
  WarpState& warp = warps_[self.warp];
  if ((warp.present & ~warp.exited) != kWholeWarp) {
    fail_collective_without_whole_warp(self, op, where);
  }

  // Almost always one exchange is open, this one, and the lane joins it.
  const WarpOpKind kind{WarpOp::collective, sizeof(void*)};
  unsigned joined = 0;
  const PendingExchange& open = warp.pending[0];
  if (warp.pending_count != 1 || open.collective != &op || open.mask != kWholeWarp) {
    joined = find_exchange(warp, self, kind, &op, kWholeWarp, kWholeWarp, where);
  }
  PendingExchange& exchange = warp.pending[joined];
  if (exchange.arrived != 0 && !same_place(where, exchange.where)) {
    fail_collective_from_two_places(self, op, where, exchange);
  }
  warp.values[self.lane] = reinterpret_cast<uintptr_t>(parcel);
  self.phase = ThreadPhase::in_warp_op;
  exchange.arrived |= 1u << self.lane;
  if (exchange.arrived == kWholeWarp) complete_exchange(warp, self.warp, joined);
  wait_for_release(self);
}

void warp_collective(const WarpCollective& op, void* parcel, const SourcePlace& where) {
  block_of_caller(op.name, where).warp_collective(op, parcel, where);
}

}  // namespace simt::detail
