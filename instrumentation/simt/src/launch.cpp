// simt::launch: workers take blocks from an atomic counter and run each to the end on their
// own BlockRun; the first failure stops the others (at their next block or barrier);
// progress is throttled and serialised; cancellation is checked before every block.
#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "instrumentation/simt/runtime.h"
#include "instrumentation/simt/src/block_run.h"
#include "instrumentation/simt/src/fiber_stack.h"
#include "instrumentation/simt/src/launch_config_check.h"
#include "instrumentation/simt/src/worker_pool.h"
#include "instrumentation/simt/src/worker_context.h"

namespace simt {

unsigned worker_index() { return detail::active_worker_index; }

uint64_t clock_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

namespace detail {

namespace {

constexpr uint64_t kProgressIntervalNs = 20'000'000;

class Launch {
 public:
  Launch(const LaunchConfig& config, const LaunchOptions& options, const KernelInvocation& kernel)
      : config_(config), options_(options), kernel_(kernel) {
    total_blocks_ = uint64_t{config.grid.x} * config.grid.y * config.grid.z;
  }

  LaunchResult run() {
    unsigned workers =
        options_.workers > 0 ? static_cast<unsigned>(options_.workers) : default_workers();
    workers = static_cast<unsigned>(std::min<uint64_t>(workers, total_blocks_));
    blocks_per_claim_ = blocks_per_claim(workers);
    if (workers > 1) {
      try {
        const std::function<void(unsigned)> job = [this](unsigned w) { work(w); };
        if (WorkerPool::instance().try_run(workers - 1, job)) return finish();
      } catch (const std::system_error& e) {
        record(LaunchResult::Status::failed, std::string("cannot start a SIMT worker thread (") +
                                                 e.what() + "); use fewer LaunchOptions::workers");
        return finish();
      }
    }
    // One worker, or the pool is in use: threads of this launch's own.
    std::vector<std::thread> helpers;
    helpers.reserve(workers - 1);
    try {
      for (unsigned w = 1; w < workers; ++w) helpers.emplace_back([this, w] { work(w); });
    } catch (const std::system_error& e) {
      // No more threads to be had: fail the launch (the workers started stop at once).
      record(LaunchResult::Status::failed, std::string("cannot start a SIMT worker thread (") +
                                               e.what() + "); use fewer LaunchOptions::workers");
    }
    work(0);  // the calling thread is worker 0
    for (std::thread& t : helpers) t.join();
    return finish();
  }

 private:
  void work(unsigned index) {
    active_worker_index = index;
    const size_t stack_bytes = effective_stack_bytes(options_.stack_bytes);
    std::unique_ptr<StackSet> stacks;
    // Blocks this worker has claimed (next_block_ hands them out blocks_per_claim_ at a time)
    // and finished but not yet added to done_blocks_.
    uint64_t claimed = 0;
    uint64_t claimed_end = 0;
    uint64_t done_here = 0;
    const auto flush_done = [this, &done_here] {
      if (done_here == 0) return;
      done_blocks_.fetch_add(done_here, std::memory_order_relaxed);
      done_here = 0;
    };
    try {
      stacks = StackPool::instance().acquire(stack_bytes);
      BlockRun block(BlockRunSetup{config_, kernel_, options_.perturb_seed, options_.cancel, &stop_,
                                   stacks.get()});
      for (;;) {
        if (stop_.load(std::memory_order_relaxed)) break;
        if (options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed)) {
          flush_done();  // the message counts the blocks done
          record(LaunchResult::Status::cancelled, "");
          break;
        }
        if (claimed == claimed_end) {
          flush_done();
          claimed = next_block_.fetch_add(blocks_per_claim_, std::memory_order_relaxed);
          if (claimed >= total_blocks_) break;
          claimed_end = std::min(claimed + blocks_per_claim_, total_blocks_);
        }
        const uint64_t b = claimed++;
        const BlockOutcome outcome = block.run(b);
        if (outcome == BlockOutcome::failed) {
          record(LaunchResult::Status::failed, block.failure());
          break;
        }
        if (outcome == BlockOutcome::cancelled) {
          if (options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed)) {
            flush_done();
            record(LaunchResult::Status::cancelled, "");
          }
          break;
        }
        ++done_here;
        if (options_.progress) maybe_report_progress(flush_done);
      }
      flush_done();
    } catch (const std::exception& e) {
      flush_done();
      record(LaunchResult::Status::failed,
             std::string("SIMT worker ") + std::to_string(index) + " failed: " + e.what());
    }
    if (stacks) StackPool::instance().release(std::move(stacks));
    active_worker_index = 0;
  }

  // One per hardware thread, but no more than keeps the launch's fiber stacks (one per thread
  // of a block, per worker) within StackPool::kMaxStacksPerLaunch memory mappings' worth.
  unsigned default_workers() const {
    const uint64_t threads_per_block =
        uint64_t{config_.block.x} * config_.block.y * config_.block.z;
    const auto by_stacks = static_cast<unsigned>(
        std::max<uint64_t>(1, StackPool::kMaxStacksPerLaunch / threads_per_block));
    return std::min(std::max(1u, std::thread::hardware_concurrency()), by_stacks);
  }

  LaunchResult finish() {
    if (status_ == LaunchResult::Status::ok) report_progress();
    return LaunchResult{status_, message_};
  }

  // Workers share next_block_ and done_blocks_: each update moves their cache line from the
  // other core. Small blocks are therefore claimed a few at a time (an empty kernel in 32-thread
  // blocks, 2 workers: 16.6-18.0 -> 16.5-16.7 ns a thread), which still leaves each worker
  // many claims to balance the load with.
  uint64_t blocks_per_claim(unsigned workers) const {
    if (workers <= 1) return 1;
    const uint64_t threads_per_block =
        uint64_t{config_.block.x} * config_.block.y * config_.block.z;
    const uint64_t by_size = std::max<uint64_t>(1, 128 / threads_per_block);
    const uint64_t by_balance = std::max<uint64_t>(1, total_blocks_ / (uint64_t{workers} * 16));
    return std::min(by_size, by_balance);
  }

  // First failure wins over a cancellation; both stop the other workers.
  void record(LaunchResult::Status status, const std::string& message) {
    std::lock_guard lock(result_mutex_);
    stop_.store(true, std::memory_order_relaxed);
    if (status_ == LaunchResult::Status::failed) return;
    if (status == LaunchResult::Status::cancelled && status_ == LaunchResult::Status::cancelled)
      return;
    status_ = status;
    message_ = status == LaunchResult::Status::cancelled
                   ? "launch cancelled after " + std::to_string(done_blocks_.load()) + " of " +
                         std::to_string(total_blocks_) + " blocks"
                   : message;
  }

  template <typename FlushDone>
  void maybe_report_progress(const FlushDone& flush_done) {
    const uint64_t now = clock_ns();
    uint64_t last = last_progress_ns_.load(std::memory_order_relaxed);
    if (now - last < kProgressIntervalNs) return;
    if (!last_progress_ns_.compare_exchange_strong(last, now)) return;  // another worker reports
    flush_done();
    report_progress();
  }

  // The count is read under the lock, so successive calls never go backwards.
  void report_progress() {
    if (!options_.progress) return;
    std::lock_guard lock(progress_mutex_);
    try {
      options_.progress(done_blocks_.load(std::memory_order_relaxed), total_blocks_);
    } catch (const std::exception& e) {
      std::lock_guard result_lock(result_mutex_);
      if (status_ != LaunchResult::Status::failed) {
        status_ = LaunchResult::Status::failed;
        message_ = std::string("the progress callback threw: ") + e.what();
      }
      stop_.store(true);
    }
  }

  const LaunchConfig config_;
  const LaunchOptions& options_;
  const KernelInvocation kernel_;
  uint64_t total_blocks_ = 0;
  uint64_t blocks_per_claim_ = 1;

  std::atomic<uint64_t> next_block_{0};
  std::atomic<uint64_t> done_blocks_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> last_progress_ns_{0};
  std::mutex progress_mutex_;

  std::mutex result_mutex_;
  LaunchResult::Status status_ = LaunchResult::Status::ok;
  std::string message_;
};

}  // namespace

LaunchResult launch_erased(const LaunchConfig& config, const LaunchOptions& options,
                           const KernelInvocation& kernel) {
  if (std::optional<std::string> problem = launch_problem(config, options)) {
    return LaunchResult{LaunchResult::Status::failed, "invalid launch: " + *problem};
  }
  if (active_block_run != nullptr) {
    return LaunchResult{LaunchResult::Status::failed,
                        "invalid launch: simt::launch was called from kernel code; a kernel "
                        "cannot launch another on the CPU"};
  }
  return Launch(config, options, kernel).run();
}

}  // namespace detail
}  // namespace simt
