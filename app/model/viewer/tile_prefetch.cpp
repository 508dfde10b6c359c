#include "app/model/viewer/tile_prefetch.h"

#include <algorithm>

namespace ts {

TilePrefetcher::TilePrefetcher(std::shared_ptr<const RunReference> reference) : reference_(std::move(reference)) {
  worker_ = std::thread([this] { run(); });
}

TilePrefetcher::~TilePrefetcher() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
    pending_.clear();
  }
  wake_.notify_all();
  worker_.join();
}

void TilePrefetcher::want(std::vector<TileId> tiles) {
  std::reverse(tiles.begin(), tiles.end());
  {
    const std::lock_guard lock(mutex_);
    pending_ = std::move(tiles);
  }
  wake_.notify_all();
}

bool TilePrefetcher::idle() const {
  const std::lock_guard lock(mutex_);
  return pending_.empty() && !busy_;
}

void TilePrefetcher::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !pending_.empty(); });
    if (stop_) return;
    const TileId id = pending_.back();
    pending_.pop_back();
    busy_ = true;
    lock.unlock();
    if (!reference_->has_cached(id)) {
      try {
        reference_->tile(id);  // into the cache
      } catch (const std::exception&) {
        // A tile that cannot be computed is reported when it is selected, by the UI's own call.
      }
    }
    lock.lock();
    busy_ = false;
  }
}

}  // namespace ts
