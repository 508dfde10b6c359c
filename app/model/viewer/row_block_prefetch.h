// Computes the float64 reference of the row blocks the user is about to step into, on a thread
// of its own, so that stepping compares each new event against a cached row block instead of
// computing one on the UI thread (8 rows x 8192 keys in float64 is ~10 ms: a dropped frame at
// 60 fps). The row blocks go into the run's RunReference cache; nothing else is shared.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "app/model/analysis/run_reference.h"

namespace ts {

class RowBlockPrefetcher {
 public:
  explicit RowBlockPrefetcher(std::shared_ptr<const RunReference> reference);
  ~RowBlockPrefetcher();  // stops after the row block in progress
  RowBlockPrefetcher(const RowBlockPrefetcher&) = delete;
  RowBlockPrefetcher& operator=(const RowBlockPrefetcher&) = delete;

  // The row blocks wanted next, most wanted first; replaces what was asked before and not yet
  // started. Row blocks already cached are skipped.
  void want(std::vector<RowBlock> blocks);
  // Nothing pending and nothing in progress (tests).
  bool idle() const;

 private:
  void run();

  std::shared_ptr<const RunReference> reference_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<RowBlock> pending_;  // most wanted last (popped from the back)
  bool busy_ = false;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace ts
