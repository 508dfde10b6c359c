// The runtime's entry points that the kernel-facing headers call (namespace simt::detail).
// Kernels never use these directly; they use the CUDA names built on them.
#pragma once

#include <cstdint>
#include <string>
#include "instrumentation/simt/kernel_api/source_place.h"

#include <vector_types.h>

namespace simt::detail {

// What `threadIdx` reads: the first member of the running fiber's record.
struct ThreadCoordinates {
  uint3 thread_idx;
};

// What `blockIdx`, `blockDim`, `gridDim` and dynamic shared memory read: the running block.
struct BlockCoordinates {
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  unsigned char* dynamic_shared;
};

// The calling OS thread's current CUDA thread and block. Outside a launch they describe a
// one-thread launch (indices 0, dimensions 1), so host code reading threadIdx does not crash.
extern constinit thread_local const ThreadCoordinates* current_thread;
extern constinit thread_local const BlockCoordinates* current_block;

inline unsigned char* dynamic_shared_memory() { return current_block->dynamic_shared; }

// __syncthreads and its reducing forms.
enum class BarrierOp : uint8_t { sync, count, all, any };
int block_barrier(BarrierOp op, int predicate, const SourcePlace& where);
void block_sync(const SourcePlace& where);  // block_barrier(sync, 1, where), specialised

// Warp-level exchanges: every lane named in the mask deposits a value, the last one computes
// every lane's result (shuffle source, ballot, reduction...).
enum class WarpOp : uint8_t {
  sync,
  shfl_idx,
  shfl_up,
  shfl_down,
  shfl_xor,
  ballot,
  any,
  all,
  match_any,
  match_all,
  reduce_add,
  reduce_min_unsigned,
  reduce_min_signed,
  reduce_max_unsigned,
  reduce_max_signed,
  reduce_and,
  reduce_or,
  reduce_xor,
  collective,  // a WarpCollective (below)
};
// What lanes of one exchange must agree on: the operation and the size of the value.
struct WarpOpKind {
  WarpOp op;
  uint8_t value_bytes;
};
// Six arguments, so that all travel in registers: the hot path of every shuffle.
//   mask: the lanes taking part; value: this lane's value (bits, zero-extended);
//   lane_arg: shuffle source lane / delta / xor mask; width: shuffle width (1..32, power of 2).
uint64_t warp_exchange(WarpOpKind kind, unsigned mask, uint64_t value, int lane_arg, int width,
                       const SourcePlace& where);

// Warp collectives: what PTX marks .sync.aligned and moves more than 8 bytes per lane (mma,
// ldmatrix, wmma loads and stores). Every one of the 32 lanes of the warp must call the same
// collective from the same place; a lane that has exited, a partial warp, a lane in another
// operation or at another place is reported, not waited for. Each lane passes a parcel (its
// operands and where its results go, in its own frame, which stays put while it waits); the
// last lane to arrive calls `complete` with the 32 parcels, indexed by lane, then releases all.
struct WarpCollective {
  const char* name;  // as reports write it, e.g. "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
  // Writes every lane's results. Returns "" or what is wrong with the lanes' operands (lanes
  // that disagree on an address they must share...): the launch then fails with it.
  std::string (*complete)(void* const parcels[32]);
};
void warp_collective(const WarpCollective& op, void* parcel, const SourcePlace& where);

// cp.async for the CPU (one queue per CUDA thread): the source is read when the copy is issued,
// the destination written only when a wait covers the copy's group (or when the thread exits).
// A kernel that reads the destination before waiting reads what was there before, e.g. the
// poison of dynamic shared memory. copy_bytes is 4, 8 or 16; bytes past src_bytes are zeros.
void async_copy(void* dst, const void* src, unsigned copy_bytes, unsigned src_bytes,
                const SourcePlace& where);
void async_copy_commit(const SourcePlace& where);
// Lands every committed group but the `pending_allowed` most recent (cp.async.wait_group).
void async_copy_wait(unsigned pending_allowed, const SourcePlace& where);

// The lanes of the caller's warp that exist and have not exited.
unsigned active_lanes();

// A kernel that asked to stop (__trap, a failed check): ends the launch with this message.
[[noreturn]] void kernel_abort(const char* what, const SourcePlace& where);

}  // namespace simt::detail
