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
// (in perturbation mode: in a seeded random order, and a warp exchange's lanes at the front or
// the back, so that a warp may run ahead of the others; see release_lanes). When nothing is ready but not every thread
// has finished, the block is deadlocked: reported, never hung.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "instrumentation/simt/kernel_api/runtime_hooks.h"
#include "instrumentation/simt/kernel_api/source_place.h"
#include "instrumentation/simt/runtime.h"
#include "instrumentation/simt/src/fiber_context.h"
#include "instrumentation/simt/src/fiber_stack.h"
#include "instrumentation/simt/src/schedule_rng.h"

namespace simt::detail {

// Thrown inside a fiber to unwind its stack when the block is abandoned (a failure elsewhere,
// cancellation). Deliberately not a std::exception: kernel code catching those must not stop it.
struct FiberUnwind {};

enum class ThreadPhase : uint8_t { not_started, running, at_barrier, in_warp_op, done };

// One CUDA thread. Everything a switch, a barrier or a shuffle touches is in this record,
// and it is one cache line in non-ASan builds: with hundreds of fibers switched in turn, each
// record is cold when its thread resumes, and every extra line is another miss.
struct alignas(64) SimtThread {
  Context context;
  ThreadCoordinates coordinates;  // what threadIdx reads
  uint16_t warp = 0;
  uint8_t lane = 0;
  // Why it waits (at_barrier: the block's barrier; in_warp_op: the warp's pending exchange
  // whose `arrived` holds its lane), which the deadlock report reads.
  ThreadPhase phase = ThreadPhase::not_started;
  unsigned linear = 0;  // index in the block (x fastest)
};

#if !defined(TS_SIMT_ASAN)
static_assert(sizeof(SimtThread) == 64, "a thread's record should be one cache line");
#endif

// A warp exchange some lanes have reached and others have not yet.
struct PendingExchange {
  WarpOp op;
  unsigned value_bytes;
  unsigned mask;                      // lanes taking part (present lanes of the requested mask)
  unsigned arrived;                   // lanes waiting in it
  ::simt::detail::SourcePlace where;  // of the first lane to arrive
  const WarpCollective* collective;   // which one, when op is WarpOp::collective
};

// A CUDA thread's cp.async copies not yet landed, in issue order (src/async_copy.cpp).
struct AsyncCopy {
  unsigned char* dst;
  uint32_t group;  // committed groups are numbered 0, 1...; the open group is open_group
  uint8_t bytes;
  unsigned char data[16];  // the source as read at issue, zero-filled past src-size
};
struct AsyncCopyQueue {
  std::vector<AsyncCopy> copies;
  uint32_t open_group = 0;  // the number the next commit gives the copies issued since the last
};

// A warp's lanes' parts of their exchanges, side by side: the lane completing an exchange
// reads every lane's value and writes every lane's result in a few cache lines, not in 32
// thread records. A lane's slots are only written by itself (value) and by the exchange it is
// in (result), and it reads its result as soon as it resumes, so no exchange can overwrite a
// slot still in use.
struct WarpState {
  uint64_t values[32];
  uint64_t results[32];
  int32_t shuffle_args[32];
  uint8_t shuffle_widths[32];
  unsigned present = 0;  // lanes that exist (a partial last warp has fewer)
  unsigned exited = 0;
  unsigned pending_count = 0;
  PendingExchange pending[32];  // at most one per waiting lane; [0] is the usual one
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
  uint64_t warp_exchange(WarpOpKind kind, unsigned requested_mask, uint64_t value, int lane_arg,
                         int width, const SourcePlace& where);
  void warp_collective(const WarpCollective& op, void* parcel, const SourcePlace& where);
  void async_copy(void* dst, const void* src, unsigned copy_bytes, unsigned src_bytes,
                  const SourcePlace& where);
  void async_copy_commit();
  void async_copy_wait(unsigned pending_allowed);
  unsigned active_lanes() const;
  [[noreturn]] void abort_from_kernel(const std::string& what, const SourcePlace& where);

  const BlockCoordinates& coordinates() const { return coordinates_; }

  // The fiber entry point needs the block its worker is running.
  [[noreturn]] void thread_main();

 private:
  void start_block(uint64_t block_linear);
  void abandon_suspended_threads();

  // Ready queue: a ring of thread records (pointers, kept inside this object, so that the
  // next thread's record is one load away at every switch); a thread is in it at most once.
  SimtThread* pop_ready() {
    if (ready_count_ == 0) return nullptr;
    SimtThread* thread = ready_[ready_head_];
    if (++ready_head_ == thread_count_) ready_head_ = 0;
    --ready_count_;
    return thread;
  }
  // In a large block the thread after the one about to run has gone cold (the whole block
  // ran since it stopped): start loading its record and the top of its stack (the saved
  // registers, the frames of the barrier or warp call and of the kernel) during this switch.
  // Small blocks stay in L1, where the prefetches would only cost instructions.
  // (always_inline: as a function of its own GCC finds it free of side effects and drops it.)
  [[gnu::always_inline]] void prefetch_next_ready() const {
    if (!prefetch_ || ready_count_ == 0) return;
    const SimtThread* after = ready_[ready_head_];
    __builtin_prefetch(after);
    const char* top = static_cast<const char*>(after->context.suspended);
    __builtin_prefetch(top);
    __builtin_prefetch(top + 64);
    __builtin_prefetch(top + 128);
  }

  // Puts the lanes of `mask` in warp `warp` at the back of the queue, in lane order or, in
  // perturbation mode, in a seeded random order at the back or (a seeded coin) the front: from
  // the back alone, every thread queued before them would run to its next barrier or warp
  // operation before this warp resumed, which keeps the warps in step across warp operations
  // and hides a race between warps that only a __syncthreads would order (a __syncwarp in its
  // place, a wmma store read by another warp). (Their phase still says where they waited; it
  // is rewritten when they next block.)
  void release_lanes(unsigned warp, unsigned mask) {
    SimtThread* first = &threads_[warp * 32];
    SimtThread** released = release_scratch_;
    unsigned count = 0;
    for (unsigned m = mask; m != 0; m &= m - 1) released[count++] = first + __builtin_ctz(m);
    if (perturb_) {
      rng_.shuffle(released, count);
      if (rng_.below(2) == 0) {
        unsigned head = ready_head_;
        for (unsigned i = count; i-- > 0;) {
          head = head == 0 ? thread_count_ - 1 : head - 1;
          ready_[head] = released[i];
        }
        ready_head_ = head;
        ready_count_ += count;
        return;
      }
    }
    // Locals, so that the stores into the ring do not force reloads of the members.
    SimtThread** ring = ready_;
    unsigned slot = ready_head_ + ready_count_;
    if (slot >= thread_count_) slot -= thread_count_;
    for (unsigned i = 0; i < count; ++i) {
      ring[slot] = released[i];
      if (++slot == thread_count_) slot = 0;
    }
    ready_count_ += count;
  }

  // Blocks the running thread (its phase already says why) and runs the next
  // ready one; returns when this thread is released. Inline: it is the hot path of every
  // barrier and warp operation.
  void wait_for_release(SimtThread& self) {
    SimtThread* next = pop_ready();
    if (next == nullptr) fail_deadlock();
    if (next != &self) switch_to(self, *next);
    if (abandoning_) throw FiberUnwind{};
  }
  void switch_to(SimtThread& self, SimtThread& next) {
    prefetch_next_ready();
    running_ = &next;
    current_thread = &next.coordinates;
    switch_context(self.context, next.context);
    // Resumed: whoever switched here has set running_ and current_thread to this thread.
  }
  [[noreturn]] void leave_thread(SimtThread& self);

  // A barrier or warp operation called once the block has failed or is being abandoned (by a
  // destructor that the unwinding runs) must neither block nor report again: it throws
  // FiberUnwind if nothing is unwinding yet, and otherwise returns at once.
  [[gnu::cold]] void stop_call() const {
    if (std::uncaught_exceptions() == 0) throw FiberUnwind{};
  }

  // Failures: record the first, then unwind the calling fiber.
  [[noreturn]] void fail(const std::string& message);
  void record_failure(BlockOutcome outcome, const std::string& message);
  bool stop_requested() const;

  // Failure reports: out of line and cold, so the hot paths keep small stack frames (every
  // fiber's frames are cache lines touched at each switch).
  [[noreturn, gnu::noinline, gnu::cold]] void fail_barrier_after_exit(const SimtThread& self,
                                                                      const SourcePlace& where);
  [[noreturn, gnu::noinline, gnu::cold]] void fail_divergent_barrier(const SimtThread& self,
                                                                     const SourcePlace& where);
  [[noreturn, gnu::noinline, gnu::cold]] void stop_at_barrier();
  enum class WarpCallProblem { mask_omits_caller, bad_width };
  [[noreturn, gnu::noinline, gnu::cold]] void fail_warp_call(const SimtThread& self,
                                                             WarpOpKind kind,
                                                             unsigned requested_mask, int width,
                                                             const SourcePlace& where,
                                                             WarpCallProblem problem);
  [[noreturn, gnu::noinline, gnu::cold]] void fail_warp_disagreement(
      const SimtThread& self, WarpOpKind kind, const WarpCollective* collective,
      unsigned requested_mask, const SourcePlace& where, const PendingExchange& waiting);
  [[noreturn, gnu::noinline, gnu::cold]] void fail_collective_without_whole_warp(
      const SimtThread& self, const WarpCollective& op, const SourcePlace& where);
  [[noreturn, gnu::noinline, gnu::cold]] void fail_collective_from_two_places(
      const SimtThread& self, const WarpCollective& op, const SourcePlace& where,
      const PendingExchange& waiting);
  [[noreturn, gnu::noinline, gnu::cold]] void fail_collective_operands(
      unsigned warp, const PendingExchange& exchange, const std::string& problem);
  // A lane leaving while a collective waits for it (record only: the lane is exiting).
  void fail_exit_during_collective(const SimtThread& self, const PendingExchange& waiting);
  [[noreturn, gnu::noinline, gnu::cold]] void fail_deadlock();
  std::string lane_text(const SimtThread& self) const;

  void on_thread_exit(SimtThread& self);
  void complete_exchange(WarpState& warp, unsigned warp_index, unsigned pending_index);
  // The exchange the lane joins (opening one if none matches), after the disagreement checks.
  unsigned find_exchange(WarpState& warp, const SimtThread& self, WarpOpKind kind,
                         const WarpCollective* collective, unsigned requested_mask, unsigned mask,
                         const SourcePlace& where);
  // cp.async: the running thread's queue; landing copies (src/async_copy.cpp).
  AsyncCopyQueue& async_copies_of_running();
  void land_async_copies(AsyncCopyQueue& queue, uint32_t groups_before);
  void reset_async_copies();
  std::string deadlock_report() const;

  // Queues threads 0..N-1 (shuffled in perturbation mode): at a block's start and when a
  // barrier releases everyone (the queue is empty then).
  void queue_every_thread();

  BlockRunSetup setup_;
  BlockCoordinates coordinates_{};
  unsigned thread_count_ = 0;
  std::vector<SimtThread> threads_;
  std::vector<WarpState> warps_;
  SimtThread* ready_[kMaxThreadsPerBlock];
  SimtThread* every_thread_[kMaxThreadsPerBlock];  // in order: copied into ready_ when a barrier
                                                   // releases all
  SimtThread* release_scratch_[32];
  bool prefetch_ = false;
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

  // Per thread, by linear index; touched only by kernels that use cp.async (async_copies_used_).
  std::vector<AsyncCopyQueue> async_copies_;
  bool async_copies_used_ = false;

  std::vector<unsigned char> dynamic_shared_storage_;  // over-allocated for alignment
  unsigned char* dynamic_shared_ = nullptr;
  size_t dynamic_shared_bytes_ = 0;

  bool perturb_ = false;
  ScheduleRng rng_;

  BlockOutcome outcome_ = BlockOutcome::running;
  bool abandoning_ = false;
  bool stopping_ = false;  // failed, cancelled or abandoned: no more blocking calls
  std::string failure_;
};

}  // namespace simt::detail
