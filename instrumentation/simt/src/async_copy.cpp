// cp.async on the CPU: each CUDA thread's copies wait in a queue of its own until a
// cp.async.wait_group (or wait_all) covers their group, and only then are written.
//
// Why deferred: on a GPU the copy lands at some point between issue and the wait, so a kernel
// that reads the destination before waiting usually works there and fails under load. Written
// at the wait, such a read sees here what the destination held before, every time (dynamic
// shared memory is poisoned at each block start, so it reads NaN). The source is read at issue,
// the first moment the GPU may read it, so a kernel that overwrites its source before waiting
// gets the data it asked for, as it may on a GPU.
#include <cstdio>
#include <cstring>
#include <string>

#include "instrumentation/simt/src/block_run.h"
#include "instrumentation/simt/src/diagnostics.h"
#include "instrumentation/simt/src/worker_context.h"

namespace simt::detail {

namespace {

std::string address_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace

AsyncCopyQueue& BlockRun::async_copies_of_running() {
  if (!async_copies_used_) {
    if (async_copies_.size() != thread_count_) async_copies_.resize(thread_count_);
    async_copies_used_ = true;
  }
  return async_copies_[running_->linear];
}

void BlockRun::reset_async_copies() {
  if (!async_copies_used_) return;
  for (AsyncCopyQueue& queue : async_copies_) {
    queue.copies.clear();  // keeps the capacity for the next block
    queue.open_group = 0;
  }
  async_copies_used_ = false;
}

void BlockRun::land_async_copies(AsyncCopyQueue& queue, uint32_t groups_before) {
  size_t kept = 0;
  for (AsyncCopy& copy : queue.copies) {
    if (copy.group < groups_before) {
      std::memcpy(copy.dst, copy.data, copy.bytes);  // in issue order, as one thread wrote them
    } else {
      queue.copies[kept++] = copy;
    }
  }
  queue.copies.resize(kept);
}

void BlockRun::async_copy(void* dst, const void* src, unsigned copy_bytes, unsigned src_bytes,
                          const SourcePlace& where) {
  const auto misaligned = [copy_bytes](const void* p) {
    return reinterpret_cast<uintptr_t>(p) % copy_bytes != 0;
  };
  const std::string size = std::to_string(copy_bytes);
  if (src_bytes > copy_bytes) {
    abort_from_kernel(
        "cp.async with src-size " + std::to_string(src_bytes) + " larger than its cp-size " + size,
        where);
  }
  if (misaligned(dst)) {
    abort_from_kernel("cp.async of " + size + " bytes to " + address_text(dst) +
                          ", which is not aligned to " + size + " bytes",
                      where);
  }
  if (src_bytes > 0 && misaligned(src)) {
    abort_from_kernel("cp.async of " + size + " bytes from " + address_text(src) +
                          ", which is not aligned to " + size + " bytes",
                      where);
  }
  AsyncCopyQueue& queue = async_copies_of_running();
  AsyncCopy copy{
      static_cast<unsigned char*>(dst), queue.open_group, static_cast<uint8_t>(copy_bytes), {}};
  std::memcpy(copy.data, src, src_bytes);  // data[] starts as zeros: the zero-fill
  queue.copies.push_back(copy);
}

void BlockRun::async_copy_commit() { ++async_copies_of_running().open_group; }

void BlockRun::async_copy_wait(unsigned pending_allowed) {
  AsyncCopyQueue& queue = async_copies_of_running();
  if (pending_allowed >= queue.open_group) return;  // no committed group is old enough
  land_async_copies(queue, queue.open_group - pending_allowed);
}

void async_copy(void* dst, const void* src, unsigned copy_bytes, unsigned src_bytes,
                const SourcePlace& where) {
  block_of_caller("cp.async", where).async_copy(dst, src, copy_bytes, src_bytes, where);
}

void async_copy_commit(const SourcePlace& where) {
  block_of_caller("cp.async.commit_group", where).async_copy_commit();
}

void async_copy_wait(unsigned pending_allowed, const SourcePlace& where) {
  block_of_caller("cp.async.wait_group", where).async_copy_wait(pending_allowed);
}

}  // namespace simt::detail
