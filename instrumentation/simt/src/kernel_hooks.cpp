// The runtime's entry points called from kernel code (runtime_hooks.h), and the per-OS-thread
// state they read.
#include <stdexcept>
#include <string>

#include "instrumentation/simt/kernel_api/runtime_hooks.h"
#include "instrumentation/simt/src/block_run.h"
#include "instrumentation/simt/src/diagnostics.h"
#include "instrumentation/simt/src/worker_context.h"

namespace simt::detail {

constinit thread_local const ThreadCoordinates* current_thread = &kOutsideThread;
constinit thread_local const BlockCoordinates* current_block = &kOutsideBlock;
constinit thread_local BlockRun* active_block_run = nullptr;
constinit thread_local unsigned active_worker_index = 0;

namespace {

// A CUDA device function called from host code (not inside a launch) has no block to act on.
BlockRun& block_of_caller(const char* what, const SourcePlace& where) {
  if (active_block_run == nullptr) {
    throw std::runtime_error(std::string(what) + " called at " + place_text(where) +
                             " outside a SIMT kernel launch; call it from kernel code run by "
                             "simt::launch");
  }
  return *active_block_run;
}

}  // namespace

int block_barrier(BarrierOp op, int predicate, const SourcePlace& where) {
  return block_of_caller("__syncthreads", where).barrier(op, predicate, where);
}

uint64_t warp_exchange(const WarpRequest& request, const SourcePlace& where) {
  return block_of_caller(warp_op_name(request.op), where).warp_exchange(request, where);
}

unsigned active_lanes() {
  return active_block_run == nullptr ? 1u : active_block_run->active_lanes();
}

void kernel_abort(const char* what, const SourcePlace& where) {
  block_of_caller(what, where).abort_from_kernel(what, where);
}

}  // namespace simt::detail
