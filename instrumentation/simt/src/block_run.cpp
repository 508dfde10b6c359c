// BlockRun: setting up a block's fibers, switching between them, and ending the block
// (normally, or by unwinding every suspended fiber after a failure or cancellation).
#include "instrumentation/simt/src/block_run.h"

#include <cstring>
#include <exception>

#include "instrumentation/simt/src/diagnostics.h"
#include "instrumentation/simt/src/worker_context.h"

namespace simt::detail {

namespace {

constexpr size_t kDynamicSharedAlignment = 64;  // >= the 16 bytes CUDA guarantees

// Where a fiber's frames start below the top of its stack. Stacks are page-aligned and the same
// size, so without an offset the hot top frames of every fiber fall in the same few L1 cache
// sets and evict each other at every switch; offsets of 64-byte steps spread them over the
// whole 4 KiB set range.
size_t stack_color_bytes(unsigned thread) { return (thread * 9u % 64u) * 64u; }

void fiber_entry(fctx::transfer_t arrival) {
  note_arrival(arrival);
  asan_finish_switch(nullptr, nullptr, nullptr);
  active_block_run->thread_main();
}

}  // namespace

BlockRun::BlockRun(const BlockRunSetup& setup) : setup_(setup) {
  const dim3 block = setup.config.block;
  thread_count_ = block.x * block.y * block.z;
  coordinates_.block_dim = block;
  coordinates_.grid_dim = setup.config.grid;

  setup_.stacks->reserve(thread_count_);
  threads_.resize(thread_count_);
  for (unsigned i = 0; i < thread_count_; ++i) {
    SimtThread& t = threads_[i];
    t.coordinates.thread_idx = uint3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
    t.linear = i;
    t.warp = static_cast<uint16_t>(i / 32);
    t.lane = static_cast<uint8_t>(i % 32);
    FiberStack& stack = (*setup_.stacks)[i];
    t.context.set_stack(stack.bottom(), stack.size());
  }
  warps_.resize((thread_count_ + 31) / 32);
  for (unsigned w = 0; w < warps_.size(); ++w) {
    const unsigned lanes = std::min(32u, thread_count_ - w * 32);
    warps_[w].present = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  }
  for (unsigned i = 0; i < thread_count_; ++i) every_thread_[i] = &threads_[i];
  prefetch_ = thread_count_ > 64;

  dynamic_shared_bytes_ = setup.config.dynamic_shared_bytes;
  dynamic_shared_storage_.resize(dynamic_shared_bytes_ + kDynamicSharedAlignment);
  const auto address = reinterpret_cast<uintptr_t>(dynamic_shared_storage_.data());
  dynamic_shared_ =
      dynamic_shared_storage_.data() +
      (kDynamicSharedAlignment - address % kDynamicSharedAlignment) % kDynamicSharedAlignment;
  coordinates_.dynamic_shared = dynamic_shared_;

  perturb_ = setup.perturb_seed.has_value();
  set_to_current_thread_stack(scheduler_);  // constructed on the worker thread that runs it
}

void BlockRun::start_block(uint64_t block_linear) {
  const dim3 grid = setup_.config.grid;
  coordinates_.block_idx = uint3{static_cast<unsigned>(block_linear % grid.x),
                                 static_cast<unsigned>((block_linear / grid.x) % grid.y),
                                 static_cast<unsigned>(block_linear / (uint64_t{grid.x} * grid.y))};
  // Poisoned, so that reading shared memory no thread wrote gives NaN (0xFF bytes).
  std::memset(dynamic_shared_, 0xff, dynamic_shared_bytes_);

  for (unsigned i = 0; i < thread_count_; ++i) {
    SimtThread& t = threads_[i];
    FiberStack& stack = (*setup_.stacks)[i];
    const size_t color = stack_color_bytes(i);
    t.context.suspended = fctx::make_fcontext(static_cast<char*>(stack.top()) - color,
                                              stack.size() - color, fiber_entry);
    t.phase = ThreadPhase::not_started;
  }
  for (WarpState& w : warps_) {
    w.exited = 0;
    w.pending_count = 0;
  }
  reset_async_copies();
  barrier_arrived_ = 0;
  finished_count_ = 0;
  exited_count_ = 0;
  outcome_ = BlockOutcome::running;
  abandoning_ = false;
  stopping_ = false;
  failure_.clear();
  if (perturb_) rng_.seed(*setup_.perturb_seed, block_linear);
  queue_every_thread();
}

void BlockRun::queue_every_thread() {
  std::memcpy(ready_, every_thread_, thread_count_ * sizeof(SimtThread*));
  if (perturb_) rng_.shuffle(ready_, thread_count_);
  ready_head_ = 0;
  ready_count_ = thread_count_;
}

BlockOutcome BlockRun::run(uint64_t block_linear) {
  start_block(block_linear);
  active_block_run = this;
  current_block = &coordinates_;

  SimtThread& first = *pop_ready();
  running_ = &first;
  current_thread = &first.coordinates;
  switch_context(scheduler_, first.context);
  // Back on the worker's stack: every thread finished, or the block failed or was cancelled.
  if (outcome_ != BlockOutcome::finished) abandon_suspended_threads();

  running_ = nullptr;
  current_thread = &kOutsideThread;
  current_block = &kOutsideBlock;
  active_block_run = nullptr;
  return outcome_;
}

void BlockRun::abandon_suspended_threads() {
  abandoning_ = true;
  stopping_ = true;
  for (SimtThread& t : threads_) {
    if (t.phase == ThreadPhase::done) continue;
    // It resumes inside a barrier or warp operation, which throws FiberUnwind; its stack
    // unwinds (destructors run) and it switches back here. A thread that never ran starts,
    // sees the block abandoned and finishes without running the kernel.
    running_ = &t;
    current_thread = &t.coordinates;
    switch_context(scheduler_, t.context);
  }
  abandoning_ = false;
}

void BlockRun::thread_main() {
  SimtThread& self = *running_;
  self.phase = ThreadPhase::running;
  bool returned = false;
  if (!abandoning_) {
    try {
      setup_.kernel.run(setup_.kernel.state);
      returned = true;
    } catch (const FiberUnwind&) {
      // The block is being abandoned, or this thread reported a failure.
    } catch (const std::exception& e) {
      record_failure(BlockOutcome::failed,
                     thread_text(self.coordinates.thread_idx, coordinates_.block_idx) +
                         ": the kernel threw an exception: " + e.what());
    } catch (...) {
      record_failure(BlockOutcome::failed,
                     thread_text(self.coordinates.thread_idx, coordinates_.block_idx) +
                         ": the kernel threw an unknown exception");
    }
  }
  self.phase = ThreadPhase::done;
  ++finished_count_;
  if (returned) on_thread_exit(self);
  leave_thread(self);
}

void BlockRun::leave_thread(SimtThread& self) {
  if (outcome_ == BlockOutcome::running && !abandoning_) {
    if (SimtThread* next = pop_ready()) {
      running_ = next;
      current_thread = &next->coordinates;
      leave_context(self.context, next->context);
    }
    if (finished_count_ == thread_count_) {
      outcome_ = BlockOutcome::finished;
    } else {
      record_failure(BlockOutcome::failed, deadlock_report());
    }
  }
  leave_context(self.context, scheduler_);
}

void BlockRun::record_failure(BlockOutcome outcome, const std::string& message) {
  if (outcome_ != BlockOutcome::running) return;  // the first failure is the one reported
  outcome_ = outcome;
  stopping_ = true;
  failure_ = message;
}

void BlockRun::fail(const std::string& message) {
  record_failure(BlockOutcome::failed, message);
  throw FiberUnwind{};
}

bool BlockRun::stop_requested() const {
  return (setup_.cancel != nullptr && setup_.cancel->load(std::memory_order_relaxed)) ||
         (setup_.stop != nullptr && setup_.stop->load(std::memory_order_relaxed));
}

void BlockRun::fail_deadlock() { fail(deadlock_report()); }

void BlockRun::abort_from_kernel(const std::string& what, const SourcePlace& where) {
  fail(thread_text(running_->coordinates.thread_idx, coordinates_.block_idx) + ": " + what +
       " at " + place_text(where));
}

}  // namespace simt::detail
