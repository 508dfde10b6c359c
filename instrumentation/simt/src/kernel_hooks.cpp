// The per-OS-thread state of the runtime and the rarely used entry points of kernel code.
// (The hot ones, block_barrier and warp_exchange, are defined beside what they call, so that
// the compiler can inline it.)
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

void throw_outside_launch(const char* what, const SourcePlace& where) {
  throw std::runtime_error(std::string(what) + " called at " + place_text(where) +
                           " outside a SIMT kernel launch; call it from kernel code run by "
                           "simt::launch");
}

unsigned active_lanes() {
  return active_block_run == nullptr ? 1u : active_block_run->active_lanes();
}

void kernel_abort(const char* what, const SourcePlace& where) {
  block_of_caller(what, where).abort_from_kernel(what, where);
}

}  // namespace simt::detail
