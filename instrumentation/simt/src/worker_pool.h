// OS threads that run a launch's workers 1..N-1, kept between launches.
//
// Starting and joining a thread per worker per launch costs tens of microseconds of CPU
// (clone, scheduling, exit, a cold cache on the new thread): as much as running a few
// thousand empty CUDA threads. Pooled helpers wait between launches: spinning for a few microseconds
// (the next launch of a loop), then on a condition variable.
//
// One launch at a time uses the pool (a lease); a launch that cannot have it (another launch
// from another host thread, a launch from a progress callback, a forked child, more helpers
// than the pool keeps) starts threads of its own as before.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace simt::detail {

class WorkerPool {
 public:
  // The process's pool; never destroyed (idle helpers simply end with the process).
  static WorkerPool& instance();

  // Runs job(1) .. job(helpers) on pooled threads, job(0) on the calling thread, and returns
  // when all have returned. False, with nothing run, when the pool cannot take this launch
  // (the caller runs it with threads of its own). Throws std::system_error when a new helper
  // cannot start (nothing has run then).
  [[nodiscard]] bool try_run(unsigned helpers, const std::function<void(unsigned)>& job);

 private:
  WorkerPool();
  void helper_main(unsigned index, unsigned long long seen);

  std::mutex lease_;  // held for a whole launch
  std::mutex mutex_;  // guards what follows
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(unsigned)>* job_ = nullptr;
  unsigned helpers_ = 0;   // threads started (indices 1..helpers_)
  unsigned asked_ = 0;     // helpers taking part in the current generation
  // Changed under the mutex only; atomic so that waiters may peek at them while spinning.
  std::atomic<unsigned> running_{0};  // helpers of the current generation not yet returned
  std::atomic<unsigned long long> generation_{0};
  const int owner_pid_;
};

}  // namespace simt::detail
