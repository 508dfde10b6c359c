// body(i) for i in [0, n) on `workers` threads (0: hardware concurrency), items taken from an
// atomic counter; the first exception stops the loop and is rethrown in the caller's thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ts {

// The most threads an analysis may be asked for (as a capture's CPU workers): more only cost
// memory and time.
inline constexpr unsigned kMaxAnalysisWorkers = 1024;

inline unsigned analysis_workers(unsigned requested) {
  return requested ? requested : std::max(1u, std::thread::hardware_concurrency());
}

template <typename Body>
void parallel_for(int64_t n, unsigned workers, Body&& body) {
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&] {
    try {
      for (int64_t i; (i = next.fetch_add(1)) < n;) body(i);
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(n);
    }
  };
  const int64_t w = std::min<int64_t>(analysis_workers(workers), std::max<int64_t>(n, 1));
  std::vector<std::thread> threads;
  for (int64_t t = 1; t < w; ++t) threads.emplace_back(run);
  run();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace ts
