// The block barrier (__syncthreads and its _count/_and/_or forms) and what a thread's exit
// means for the threads still waiting.
//
// A counting barrier: it completes when every thread of the block has arrived from the same
// place in the source. Arriving from another place (a divergent barrier), arriving after a
// thread has exited, or exiting while others wait are failures: on a GPU they hang or
// silently corrupt shared memory, so the runtime names the threads and places instead.
// (Warp operations differ: CUDA defines them over the non-exited lanes of their masks, so a
// lane's exit only shrinks the exchanges that wait for it; see warp_exchange.cpp. Warp
// collectives, warp_collective.cpp, need every lane, so an exit while one waits is a failure.)
#include "instrumentation/simt/src/block_run.h"
#include "instrumentation/simt/src/diagnostics.h"
#include "instrumentation/simt/src/worker_context.h"

namespace simt::detail {

void BlockRun::fail_barrier_after_exit(const SimtThread& self, const SourcePlace& where) {
  fail(thread_text(self.coordinates.thread_idx, coordinates_.block_idx) +
       " reached __syncthreads at " + place_text(where) + ", but thread " +
       coordinates_text(threads_[first_exited_].coordinates.thread_idx) +
       " has already exited: a barrier must be reached by every thread of the block "
       "(the barrier is reached by only part of the block)");
}

void BlockRun::fail_divergent_barrier(const SimtThread& self, const SourcePlace& where) {
  fail("divergent __syncthreads in block " + coordinates_text(coordinates_.block_idx) +
       ": thread " + coordinates_text(self.coordinates.thread_idx) + " reached it at " +
       place_text(where) + " while thread " +
       coordinates_text(threads_[barrier_first_].coordinates.thread_idx) + " waits at " +
       place_text(barrier_where_) +
       " (a barrier must be reached by all threads from the same place)");
}

void BlockRun::stop_at_barrier() {
  record_failure(BlockOutcome::cancelled, "cancelled");
  throw FiberUnwind{};
}

// Inline into the two hooks below: __syncthreads gets a copy specialised for BarrierOp::sync.
[[gnu::always_inline]] inline int BlockRun::barrier(BarrierOp op, int predicate,
                                                    const SourcePlace& where) {
  if (stopping_) [[unlikely]] {
    stop_call();
    return 0;
  }
  SimtThread& self = *running_;
  if (barrier_arrived_ == 0) {
    // Checked by the first arrival only: a thread exiting later, while others wait, is
    // reported by on_thread_exit.
    if (exited_count_ > 0) fail_barrier_after_exit(self, where);
    barrier_where_ = where;
    barrier_op_ = op;
    barrier_first_ = self.linear;
    barrier_true_count_ = 0;
  } else if (op != barrier_op_ || !same_place(where, barrier_where_)) {
    fail_divergent_barrier(self, where);
  }
  barrier_true_count_ += predicate != 0 ? 1 : 0;
  self.phase = ThreadPhase::at_barrier;

  if (++barrier_arrived_ == thread_count_) {
    barrier_arrived_ = 0;
    switch (op) {
      case BarrierOp::sync: barrier_result_ = 0; break;
      case BarrierOp::count: barrier_result_ = barrier_true_count_; break;
      case BarrierOp::all:
        barrier_result_ = barrier_true_count_ == static_cast<int>(thread_count_);
        break;
      case BarrierOp::any: barrier_result_ = barrier_true_count_ > 0; break;
    }
    if (stop_requested()) stop_at_barrier();
    // Every thread waits here, so the ready queue is empty: refill it with all of them.
    queue_every_thread();
  }
  wait_for_release(self);
  return barrier_result_;
}

int block_barrier(BarrierOp op, int predicate, const SourcePlace& where) {
  return block_of_caller("__syncthreads", where).barrier(op, predicate, where);
}

void block_sync(const SourcePlace& where) {
  block_of_caller("__syncthreads", where).barrier(BarrierOp::sync, 1, where);
}

void BlockRun::on_thread_exit(SimtThread& self) {
  const uint3 block = coordinates_.block_idx;
  if (exited_count_++ == 0) first_exited_ = self.linear;
  WarpState& warp = warps_[self.warp];
  const unsigned bit = 1u << self.lane;
  warp.exited |= bit;

  // Copies the thread issued and never waited for land now (the hardware completes them too).
  if (async_copies_used_) {
    AsyncCopyQueue& queue = async_copies_[self.linear];
    land_async_copies(queue, queue.open_group + 1);
  }

  if (barrier_arrived_ > 0) {
    record_failure(
        BlockOutcome::failed,
        thread_text(self.coordinates.thread_idx, block) + " exited while " +
            std::to_string(barrier_arrived_) + " thread(s) wait at __syncthreads at " +
            place_text(barrier_where_) + " (first: thread " +
            coordinates_text(threads_[barrier_first_].coordinates.thread_idx) +
            "): the barrier is reached by only part of the block and can never complete");
    return;
  }
  // A collective needs every lane of the warp (PTX's .sync.aligned): it never completes now.
  for (unsigned i = 0; i < warp.pending_count; ++i) {
    const PendingExchange& p = warp.pending[i];
    if (p.op == WarpOp::collective && (p.mask & bit) != 0) {
      fail_exit_during_collective(self, p);
      return;
    }
  }
  // Warp operations wait only for the non-exited lanes named in their masks (CUDA's rule): an
  // exchange waiting for this lane now completes without it. (Its value reads as poison.)
  for (unsigned i = 0; i < warp.pending_count;) {
    PendingExchange& p = warp.pending[i];
    p.mask &= ~bit;
    if (p.mask == p.arrived) {
      complete_exchange(warp, self.warp, i);  // removes pending[i]: look at i again
    } else {
      ++i;
    }
  }
}

}  // namespace simt::detail
