// The probe API a kernel includes to record its state into a trace (see trace_event.h).
//
//   ts::BlockProbe<kTrace> probe(params.trace, block_linear_index);   // every thread
//   ...
//   ts::ProbeEvent ev = probe.open(params.trace, ts::Stage::fa1_step, index);  // every thread; index counts
//                                                                   // this block's events of the stage
//   if (ev) {                                     // block-uniform: on, not filtered, fits
//     ev.m()[row] = m_row;  ev.l()[row] = l_row;  ev.o_row(row)[col] = acc;   // owners write
//     if (is_first_thread) ev.header(hdr);       // one thread fills the coordinates
//   }
//
// With kTrace == false every call is a compile-time constant and the probes vanish: the plain
// kernel carries no cost from their existence. With kTrace == true and tracing off at run time
// (view.headers == nullptr) a probe costs one uniform branch.
//
// Keeping the instrumented kernel's main loop the plain kernel's. Register allocation is
// global: a value that only an event needs, held from the kernel's start to an event after
// (or inside) its main loop, or even event code inlined after the loop, makes ptxas compile
// the loop differently (6% on the decode kernel, none of it in the probes' own instructions).
// So the kernels write an event from a __noinline__ device function called where the event is
// (guarded by `params.trace.headers != nullptr` inside a loop), that takes the kernel's params
// by reference (the kernel declares them __grid_constant__: no copy to local memory) and
// everything else where it is written: its coordinates from EventSite::here() (fresh reads of
// the block and thread indices that the compiler can neither hoist nor merge with the
// kernel's own), the view from the params, and its payload from where the kernel has put it
// (shared memory, the kernel's own output read back by the thread that wrote it, or
// registers passed by value). Figures: docs/perf.md, "Instrumented kernels with tracing off".
//
// Slots are assigned by the launcher (block_slot_base), not reserved with atomics at run time,
// so a probe adds no synchronisation to the kernel it observes (a probe that called
// __syncthreads would hide the very races tilescope looks for) and the buffer is in the
// kernel's own order. An event whose slot is past the capacity is dropped and counted once.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "instrumentation/trace/trace_event.h"

namespace ts {

namespace probe_detail {

__device__ __forceinline__ int32_t where_am_i() {
#if defined(__CUDA_ARCH__)
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  return static_cast<int32_t>(smid);
#elif defined(TILESCOPE_SIMT_CPU)
  return static_cast<int32_t>(::simt::worker_index());
#else
  return -1;
#endif
}

__device__ __forceinline__ uint64_t now_ns() {
#if defined(__CUDA_ARCH__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#elif defined(TILESCOPE_SIMT_CPU)
  return ::simt::clock_ns();
#else
  return 0;
#endif
}

__device__ __forceinline__ bool is_block_leader() {
  return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
}

#if defined(__CUDA_ARCH__)
// A special register read the compiler must repeat where it stands (volatile): never hoisted
// above a loop, never merged with an earlier read of the same register.
#define TS_PROBE_FRESH_SREG(name)                              \
  [] {                                                         \
    unsigned value;                                            \
    asm volatile("mov.u32 %0, %%" #name ";" : "=r"(value));   \
    return value;                                              \
  }()
#endif

}  // namespace probe_detail

// The block and thread an event is written from, read afresh at the event point (see the top
// of this file): values derived from it are computed there and carried by no register through
// the kernel's main loop. Same values as blockIdx, gridDim and threadIdx.x.
struct EventSite {
  uint3 block;
  uint3 grid;
  int thread;

  __device__ static EventSite here() {
#if defined(__CUDA_ARCH__)
    return EventSite{uint3{TS_PROBE_FRESH_SREG(ctaid.x), TS_PROBE_FRESH_SREG(ctaid.y),
                           TS_PROBE_FRESH_SREG(ctaid.z)},
                     uint3{TS_PROBE_FRESH_SREG(nctaid.x), TS_PROBE_FRESH_SREG(nctaid.y),
                           TS_PROBE_FRESH_SREG(nctaid.z)},
                     static_cast<int>(TS_PROBE_FRESH_SREG(tid.x))};
#else
    return EventSite{uint3{blockIdx.x, blockIdx.y, blockIdx.z},
                     uint3{gridDim.x, gridDim.y, gridDim.z}, static_cast<int>(threadIdx.x)};
#endif
  }

  // The block's index in its launch as the launcher's slot table counts blocks.
  __device__ int64_t block_linear() const {
    return static_cast<int64_t>(block.x) +
           static_cast<int64_t>(grid.x) *
               (static_cast<int64_t>(block.y) + static_cast<int64_t>(grid.y) * block.z);
  }
};

// One open event: where the threads of a block write their parts of the payload. Holds plain
// pointers, made from the view where the event is written (see BlockProbe).
class ProbeEvent {
 public:
  ProbeEvent() = default;
  __device__ ProbeEvent(const TraceDeviceView& view, int64_t slot)
      : header_(view.headers + slot),
        m_(view.m + slot * view.block_m),
        l_(view.l + slot * view.block_m),
        o_(view.o + slot * view.block_m * static_cast<int64_t>(view.head_dim)),
        head_dim_(view.head_dim) {}

  __device__ explicit operator bool() const { return header_ != nullptr; }
  __device__ float* m() const { return m_; }
  __device__ float* l() const { return l_; }
  __device__ float* o_row(int row) const { return o_ + static_cast<int64_t>(row) * head_dim_; }
  // Coordinates; `where` and `time_ns` are filled here. Call from one thread.
  __device__ void header(EventHeader h) const {
    h.where = probe_detail::where_am_i();
    h.time_ns = probe_detail::now_ns();
    *header_ = h;
  }

 private:
  EventHeader* header_ = nullptr;
  float* m_ = nullptr;
  float* l_ = nullptr;
  float* o_ = nullptr;
  int32_t head_dim_ = 0;
};

// A block's handle on the trace. It keeps one pointer (the block's row of the slot table) and
// nothing else: the view is passed again to open() and read from the kernel's params where the
// event is written, so the instrumented kernel's main loop holds no extra live state. (Holding
// the view's address made nvcc copy the params to local memory, 7% on the decode kernel;
// holding a copy of the view changed the loop's register allocation, 40% on it.)
template <bool kTrace>
class BlockProbe {
 public:
  __device__ BlockProbe(const TraceDeviceView& view, int64_t block_linear) {
    if constexpr (kTrace) {
      if (view.headers != nullptr && view.block_slot_base != nullptr)
        bases_ = view.block_slot_base + block_linear * kNumStages;
    } else {
      (void)view;
      (void)block_linear;
    }
  }

  // Block-uniform: whether this block records events of this stage at all.
  __device__ bool wants(Stage stage) const {
    if constexpr (kTrace) {
      return bases_ != nullptr && bases_[static_cast<int>(stage)] >= 0;
    } else {
      (void)stage;
      return false;
    }
  }

  // Every thread of the block calls it with the same arguments (`view` is the one the probe
  // was made from); `index` numbers this block's events of `stage` from 0. An empty event when
  // the stage is not recorded; a dropped event (counted once, by the block's first thread)
  // when the slot is past the buffer's capacity.
  __device__ ProbeEvent open(const TraceDeviceView& view, Stage stage, int index) const {
    if constexpr (kTrace) {
      if (!wants(stage)) return ProbeEvent{};
      const int64_t slot = bases_[static_cast<int>(stage)] + index;
      if (slot >= view.capacity) {
        if (probe_detail::is_block_leader()) atomicAdd(view.dropped, 1ull);
        return ProbeEvent{};
      }
      return ProbeEvent{view, slot};
    } else {
      (void)view;
      (void)stage;
      (void)index;
      return ProbeEvent{};
    }
  }

 private:
  const int64_t* bases_ = nullptr;
};

}  // namespace ts
