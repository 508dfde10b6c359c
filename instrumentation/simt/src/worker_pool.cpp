#include "instrumentation/simt/src/worker_pool.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace simt::detail {

namespace {
// More helpers than this are not kept: a launch asking for more runs with threads of its own.
unsigned max_pooled_helpers() {
  static const unsigned count = std::max(1u, std::thread::hardware_concurrency()) - 1;
  return count;
}

// The waits of a pooled launch are often short: a helper waits for the next launch of a loop,
// the caller for the other worker's last claim of small blocks. Sleeping on the condition
// variable and being woken costs more CPU than that in this VM (futex calls, a wake-up on the
// other core), so both first spin, peeking at the atomics; what they saw is then confirmed
// under the mutex, where every decision is taken. The caller spins briefly: when the helper
// has lost its core to another process, the caller's spinning is pure loss.
constexpr auto kHelperSpin = std::chrono::microseconds(20);
constexpr auto kCallerSpin = std::chrono::microseconds(4);

template <typename Ready>
void spin_until(std::chrono::microseconds spin, const Ready& ready) {
  const auto deadline = std::chrono::steady_clock::now() + spin;
  do {
    for (int i = 0; i < 16; ++i) {
      if (ready()) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  } while (std::chrono::steady_clock::now() < deadline);
}

}  // namespace

WorkerPool& WorkerPool::instance() {
  static WorkerPool* pool = new WorkerPool();  // leaked on purpose: see the header
  return *pool;
}

WorkerPool::WorkerPool() : owner_pid_(static_cast<int>(getpid())) {}

bool WorkerPool::try_run(unsigned helpers, const std::function<void(unsigned)>& job) {
  // A forked child has the pool's memory but not its threads.
  if (helpers > max_pooled_helpers() || static_cast<int>(getpid()) != owner_pid_) return false;
  std::unique_lock lease(lease_, std::try_to_lock);
  if (!lease.owns_lock()) return false;
  {
    std::lock_guard lock(mutex_);
    while (helpers_ < helpers) {
      const unsigned index = helpers_ + 1;
      const unsigned long long seen = generation_;  // so that it takes part in this launch
      std::thread([this, index, seen] { helper_main(index, seen); }).detach();  // may throw
      ++helpers_;
    }
    job_ = &job;
    asked_ = helpers;
    running_ = helpers;
    ++generation_;
  }
  start_.notify_all();
  job(0);
  spin_until(kCallerSpin, [this] { return running_.load(std::memory_order_relaxed) == 0; });
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
  return true;
}

void WorkerPool::helper_main(unsigned index, unsigned long long seen) {
  for (;;) {
    spin_until(kHelperSpin, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
    std::unique_lock lock(mutex_);
    start_.wait(lock, [&] { return generation_ != seen; });
    seen = generation_;
    if (index > asked_) continue;
    const std::function<void(unsigned)>* job = job_;
    lock.unlock();
    (*job)(index);
    lock.lock();
    if (--running_ == 0) done_.notify_one();
  }
}

}  // namespace simt::detail
