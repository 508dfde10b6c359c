#include "instrumentation/simt/src/fiber_stack.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "instrumentation/simt/src/fiber_context.h"
#include "instrumentation/simt/src/sanitizer.h"

namespace simt::detail {

namespace {

size_t page_bytes() {
  static const size_t bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

// AddressSanitizer's instrumented frames are several times larger: give fibers more room.
constexpr size_t kDefaultStackBytes = kAddressSanitizer ? 256 * 1024 : 64 * 1024;

}  // namespace

size_t effective_stack_bytes(size_t requested) {
  const size_t bytes = requested == 0 ? kDefaultStackBytes : requested;
  const size_t page = page_bytes();
  return (bytes + page - 1) / page * page;
}

FiberStack::FiberStack(size_t usable_bytes) {
  const size_t guard = page_bytes();
  mapping_bytes_ = usable_bytes + guard;
  void* mapping = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) {
    throw std::runtime_error("SIMT runtime: cannot map a " + std::to_string(usable_bytes) +
                             "-byte fiber stack (" + std::strerror(errno) +
                             "); use fewer threads per block or a smaller stack_bytes");
  }
  // Stacks grow down: the guard is the lowest page.
  if (mprotect(mapping, guard, PROT_NONE) != 0) {
    const int error = errno;
    munmap(mapping, mapping_bytes_);
    throw std::runtime_error(
        std::string("SIMT runtime: cannot protect a fiber stack's guard page (") +
        std::strerror(error) + ")");
  }
  mapping_ = mapping;
  usable_bottom_ = static_cast<char*>(mapping) + guard;
  usable_bytes_ = usable_bytes;
}

FiberStack::~FiberStack() {
  if (mapping_ != nullptr) munmap(mapping_, mapping_bytes_);
}

FiberStack::FiberStack(FiberStack&& other) noexcept
    : mapping_(other.mapping_),
      mapping_bytes_(other.mapping_bytes_),
      usable_bottom_(other.usable_bottom_),
      usable_bytes_(other.usable_bytes_) {
  other.mapping_ = nullptr;
}

void set_to_current_thread_stack(Context& context) {
  if constexpr (kAddressSanitizer) {
    // pthread_getattr_np parses /proc/self/maps for the main thread (slow, and there are many
    // fiber stacks mapped): once per OS thread.
    struct Bounds {
      void* bottom = nullptr;
      size_t size = 0;
      bool known = false;
    };
    thread_local Bounds bounds;
    if (!bounds.known) {
      pthread_attr_t attributes;
      if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
        pthread_attr_getstack(&attributes, &bounds.bottom, &bounds.size);
        pthread_attr_destroy(&attributes);
      }
      bounds.known = true;
    }
    context.set_stack(bounds.bottom, bounds.size);
  } else {
    (void)context;  // only ASan needs to know a stack's bounds
  }
}

void StackSet::reserve(size_t count) {
  stacks_.reserve(count);
  while (stacks_.size() < count) stacks_.emplace_back(stack_bytes_);
}

StackPool& StackPool::instance() {
  static StackPool pool;
  return pool;
}

std::unique_ptr<StackSet> StackPool::acquire(size_t stack_bytes) {
  {
    std::lock_guard lock(mutex_);
    // The largest free set of this stack size: it is the likeliest to need no growth.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if ((*it)->stack_bytes() == stack_bytes &&
          (best == free_.end() || (*it)->count() > (*best)->count())) {
        best = it;
      }
    }
    if (best != free_.end()) {
      std::unique_ptr<StackSet> set = std::move(*best);
      free_.erase(best);
      pooled_stacks_ -= set->count();
      return set;
    }
  }
  return std::make_unique<StackSet>(stack_bytes);
}

void StackPool::release(std::unique_ptr<StackSet> set) {
  std::lock_guard lock(mutex_);
  if (pooled_stacks_ + set->count() > kMaxPooledStacks) return;  // unmapped here
  pooled_stacks_ += set->count();
  free_.push_back(std::move(set));
}

}  // namespace simt::detail
