// One running block: its CUDA threads as fibers, the ready queue, the block barrier and the
// per-warp exchanges, and what went wrong if anything did.
//
// A SIMT worker owns one BlockRun and reuses it for every block it takes. All of it is touched
// by one OS thread only (the fibers of a block never leave their worker), so nothing here is
// synchronised.
//
// Scheduling: a thread runs until it blocks (barrier, warp operation) or finishes, then
// switches directly to the next thread in the ready queue. Threads start in order 0..N-1;
// threads released by a barrier or a warp exchange join the back of the queue in thread order
// (or a seeded random order in perturbation mode). When nothing is ready but not every thread
// has finished, the block is deadlocked: reported, never hung.
#pragma once

#include <cstdint>
#include <memory>
#include "instrumentation/simt/kernel_api/source_place.h"
#include <string>
#include <vector>

#include "instrumentation/simt/kernel_api/runtime_hooks.h"
#include "instrumentation/simt/runtime.h"
#include "instrumentation/simt/src/fiber_context.h"
#include "instrumentation/simt/src/fiber_stack.h"
#include "instrumentation/simt/src/schedule_rng.h"

namespace simt::detail {

// Thrown inside a fiber to unwind its stack when the block is abandoned (a failure elsewhere,
// cancellation). Deliberately not a std::exception: kernel code catching those must not stop it.
struct FiberUnwind {};

enum class ThreadPhase : uint8_t { not_started, ready, running, at_barrier, in_warp_op, done };

struct SimtThread {
  ThreadCoordinates coordinates;  // what threadIdx reads
  Context context;
  unsigned linear = 0;  // index in the block (x fastest)
  unsigned warp = 0;
  unsigned lane = 0;
  ThreadPhase phase = ThreadPhase::not_started;
  bool started = false;  // has a stack frame to unwind
  // What it waits on, for reports.
  ::simt::detail::SourcePlace wait_where;
  // Its part of the current warp exchange.
  WarpRequest request{};
  uint64_t warp_result = 0;
};

// A warp exchange some lanes have reached and others have not yet.
struct PendingExchange {
  WarpOp op;
  unsigned value_bytes;
  unsigned mask;     // lanes taking part (present lanes of the requested mask)
  unsigned arrived;  // lanes waiting in it
  ::simt::detail::SourcePlace where;  // of the first lane to arrive
};

struct WarpState {
  unsigned present = 0;  // lanes that exist (a partial last warp has fewer)
  unsigned exited = 0;
  unsigned pending_count = 0;
  PendingExchange pending[32];  // at most one per waiting lane
};

enum class BlockOutcome : uint8_t { running, finished, failed, cancelled };

// What a block run needs from its launch.
struct BlockRunSetup {
  LaunchConfig config;
  KernelInvocation kernel;
  std::optional<uint64_t> perturb_seed;
  const std::atomic<bool>* cancel = nullptr;  // the user's flag
  const std::atomic<bool>* stop = nullptr;    // another worker failed
  StackSet* stacks = nullptr;
};

class BlockRun {
 public:
  explicit BlockRun(const BlockRunSetup& setup);
  BlockRun(const BlockRun&) = delete;
  BlockRun& operator=(const BlockRun&) = delete;

  // Runs block `block_linear` to the end on the calling (worker) thread.
  BlockOutcome run(uint64_t block_linear);
  const std::string& failure() const { return failure_; }

  // --- called from kernel code through the hooks, on the running fiber ---
  SimtThread& running() { return *running_; }
  int barrier(BarrierOp op, int predicate, const SourcePlace& where);
  uint64_t warp_exchange(const WarpRequest& request, const SourcePlace& where);
  unsigned active_lanes() const;
  [[noreturn]] void abort_from_kernel(const std::string& what, const SourcePlace& where);

  const BlockCoordinates& coordinates() const { return coordinates_; }

  // The fiber entry point needs the block its worker is running.
  [[noreturn]] void thread_main();

 private:
  void start_block(uint64_t block_linear);
  void finish_block();
  void abandon_suspended_threads();

  // Ready queue (a ring of thread indices; a thread is in it at most once).
  void push_ready(unsigned thread) {
    unsigned slot = ready_head_ + ready_count_;
    if (slot >= thread_count_) slot -= thread_count_;
    ready_[slot] = thread;
    ++ready_count_;
  }
  SimtThread* pop_ready() {
    if (ready_count_ == 0) return nullptr;
    const unsigned thread = ready_[ready_head_];
    if (++ready_head_ == thread_count_) ready_head_ = 0;
    --ready_count_;
    return &threads_[thread];
  }
  // Puts `count` released threads at the back of the queue, shuffled in perturbation mode.
  void release(unsigned* threads, unsigned count);

  // Blocks the running thread (its phase already says why) and runs the next ready one.
  void wait_for_release(SimtThread& self);
  void switch_to(SimtThread& self, SimtThread& next);
  [[noreturn]] void leave_thread(SimtThread& self);

  // Failures: record the first, then unwind the calling fiber.
  [[noreturn]] void fail(const std::string& message);
  void record_failure(BlockOutcome outcome, const std::string& message);
  bool stop_requested() const;

  void on_thread_exit(SimtThread& self);
  void complete_exchange(WarpState& warp, unsigned warp_index, unsigned pending_index);
  std::string deadlock_report() const;

  void fill_initial_queue();

  BlockRunSetup setup_;
  BlockCoordinates coordinates_{};
  unsigned thread_count_ = 0;
  std::vector<SimtThread> threads_;
  std::vector<WarpState> warps_;
  std::vector<unsigned> ready_;
  std::vector<unsigned> release_scratch_;
  unsigned ready_head_ = 0;
  unsigned ready_count_ = 0;
  SimtThread* running_ = nullptr;
  Context scheduler_;  // the worker's own stack

  // Block barrier.
  unsigned barrier_arrived_ = 0;
  int barrier_true_count_ = 0;
  int barrier_result_ = 0;
  BarrierOp barrier_op_ = BarrierOp::sync;
  ::simt::detail::SourcePlace barrier_where_;
  unsigned barrier_first_ = 0;

  unsigned finished_count_ = 0;  // threads done (returned or unwound)
  unsigned exited_count_ = 0;    // threads that returned from the kernel
  unsigned first_exited_ = 0;

  std::vector<unsigned char> dynamic_shared_storage_;  // over-allocated for alignment
  unsigned char* dynamic_shared_ = nullptr;
  size_t dynamic_shared_bytes_ = 0;

  bool perturb_ = false;
  ScheduleRng rng_;

  BlockOutcome outcome_ = BlockOutcome::running;
  bool abandoning_ = false;
  std::string failure_;
};

}  // namespace simt::detail
