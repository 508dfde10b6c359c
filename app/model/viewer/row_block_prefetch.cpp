#include "app/model/viewer/row_block_prefetch.h"

#include <algorithm>

namespace ts {

RowBlockPrefetcher::RowBlockPrefetcher(std::shared_ptr<const RunReference> reference) : reference_(std::move(reference)) {
  worker_ = std::thread([this] { run(); });
}

RowBlockPrefetcher::~RowBlockPrefetcher() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
    pending_.clear();
  }
  wake_.notify_all();
  worker_.join();
}

void RowBlockPrefetcher::want(std::vector<RowBlock> blocks) {
  std::reverse(blocks.begin(), blocks.end());
  {
    const std::lock_guard lock(mutex_);
    pending_ = std::move(blocks);
  }
  wake_.notify_all();
}

bool RowBlockPrefetcher::idle() const {
  const std::lock_guard lock(mutex_);
  return pending_.empty() && !busy_;
}

void RowBlockPrefetcher::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !pending_.empty(); });
    if (stop_) return;
    const RowBlock block = pending_.back();
    pending_.pop_back();
    busy_ = true;
    lock.unlock();
    if (!reference_->has_cached(block)) {
      try {
        reference_->block(block);  // into the cache
      } catch (const std::exception&) {
        // A row block that cannot be computed is reported when it is selected, by the UI's own
        // call.
      }
    }
    lock.lock();
    busy_ = false;
  }
}

}  // namespace ts
