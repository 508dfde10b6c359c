// The seeded random order of schedule-perturbation mode. Each block draws from its own stream
// (seed mixed with the block's index), so a seed gives the same schedule whatever worker
// runs the block and however many workers there are.
#pragma once

#include <cstdint>

namespace simt::detail {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class ScheduleRng {
 public:
  void seed(uint64_t launch_seed, uint64_t block_linear) {
    state_ = splitmix64(launch_seed ^ splitmix64(block_linear + 1));
  }
  // Uniform in [0, bound).
  uint32_t below(uint32_t bound) {
    state_ = splitmix64(state_);
    return static_cast<uint32_t>(((state_ >> 32) * bound) >> 32);
  }
  // Fisher-Yates shuffle of items[0..count).
  template <typename T>
  void shuffle(T* items, uint32_t count) {
    for (uint32_t i = count; i > 1; --i) {
      const uint32_t j = below(i);
      const T t = items[i - 1];
      items[i - 1] = items[j];
      items[j] = t;
    }
  }

 private:
  uint64_t state_ = 0;
};

}  // namespace simt::detail
