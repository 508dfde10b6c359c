// Fiber stacks: mmap'ed with a PROT_NONE guard page below, so an overflowing CUDA thread
// crashes cleanly at the guard instead of corrupting its neighbour's stack.
//
// A StackSet holds the stacks one SIMT worker needs (one per thread of the largest block it
// has run). Sets are pooled across launches: mapping 1024 stacks costs about a millisecond,
// and a second launch should not pay it again.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace simt::detail {

class FiberStack {
 public:
  explicit FiberStack(size_t usable_bytes);  // throws std::runtime_error when mmap fails
  ~FiberStack();
  FiberStack(FiberStack&& other) noexcept;
  FiberStack& operator=(FiberStack&&) = delete;
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;

  void* bottom() const { return usable_bottom_; }  // lowest usable address
  void* top() const { return static_cast<char*>(usable_bottom_) + usable_bytes_; }
  size_t size() const { return usable_bytes_; }

 private:
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  void* usable_bottom_ = nullptr;
  size_t usable_bytes_ = 0;
};

class StackSet {
 public:
  explicit StackSet(size_t stack_bytes) : stack_bytes_(stack_bytes) {}
  size_t stack_bytes() const { return stack_bytes_; }
  // Grows the set to at least `count` stacks.
  void reserve(size_t count);
  FiberStack& operator[](size_t i) { return stacks_[i]; }
  size_t count() const { return stacks_.size(); }

 private:
  size_t stack_bytes_;
  std::vector<FiberStack> stacks_;
};

// Process-wide pool of stack sets, shared by concurrent launches (mutex-protected).
//
// Every stack is two kernel memory mappings (the guard page and the stack), and Linux allows a
// process 65530 (vm.max_map_count): the pool keeps at most kMaxPooledStacks idle stacks, and
// the default worker count keeps a launch's stacks to kMaxStacksPerLaunch (launch.cpp).
class StackPool {
 public:
  static constexpr size_t kMaxPooledStacks = 8192;
  static constexpr size_t kMaxStacksPerLaunch = 16384;

  static StackPool& instance();
  std::unique_ptr<StackSet> acquire(size_t stack_bytes);
  void release(std::unique_ptr<StackSet> set);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<StackSet>> free_;
  size_t pooled_stacks_ = 0;
};

// The usable stack size for a requested one: 0 means the default; rounded up to pages.
size_t effective_stack_bytes(size_t requested);

}  // namespace simt::detail
