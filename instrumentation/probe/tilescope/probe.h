// The probe API: what a CUDA kernel calls to record a softmax state into a tilescope trace
// (event.h says what an event holds, trace_view.h how slots are found). Part of the installed
// SDK; it compiles in a .cu under nvcc (no extra nvcc flags needed) and, on tilescope's CPU
// path, under the host compiler after <cuda_runtime.h> (tilescope's own there: the SIMT
// runtime), or after instrumentation/simt/cuda_compat.h in tilescope's tree.
//
// Compiled out: unless TILESCOPE_TRACE is defined to 1, every function here is an inline
// constant and the probes vanish from the kernel (Tracy's habit). Compiled in, a probe whose
// view has no buffer (tracing off at run time) costs one uniform branch.
//
// Three ways to write an event, by who holds its payload:
//
//   // 1. One thread holds whole rows (e.g. a thread per query row): it records alone.
//   tilescope::record(view, tilescope::state(kPartial, b, h, q, 1).keys(k0, k1).split(s),
//                     &m, &l, o_row);                               // unplanned: an atomic slot
//
//   // 2. A warp holds the payload: every lane calls open_warp with the same description; lane 0
//   //    takes the slot and the warp shares it by a shuffle (no block-wide synchronisation).
//   tilescope::Event ev = tilescope::open_warp(view, desc);
//   if (ev) { ev.o_row(r)[c] = acc; if (lane == 0) ev.commit(desc); }
//
//   // 3. The block holds it and the kernel knows its events: a planned slot (uniform plan or
//   //    the launcher's table), the same in every thread without communication.
//   tilescope::Event ev = tilescope::open_planned(view, desc, index);   // every thread
//   if (ev) { ...threads write their parts...; if (threadIdx.x == 0) ev.commit(desc); }
//
// Every path checks the view's filters first and counts an event that finds no slot in
// `dropped`. `commit` writes the header last-but-not-ordered: nothing in a trace is read before
// the kernel has finished. An event holds at most the view's max_rows rows (record() writes no
// more; with open_warp / open_planned the kernel must keep to them) and kMaxKeyRanges key
// ranges (a description given more is marked invalid, and the recorder refuses it by name
// rather than store wrong keys). The view comes as an argument or from a `__device__` symbol:
//   TILESCOPE_TRACE_SYMBOL(my_trace);   // at namespace scope in the kernel's .cu; the recorder
//                                       // sets it (tilescope/recorder.h: bind_symbol)
//
// Keeping an instrumented kernel's main loop the plain kernel's: register allocation is global,
// so a value only an event needs, held across the main loop, changes the loop. Read coordinates
// afresh where the event is written (EventSite::here()) rather than holding them. Going
// further, write the event from a __noinline__ function taking the kernel's params by
// reference (__grid_constant__): tilescope's Split-K partial kernel writes its events so
// (kernels/splitk_partial.cuh: record_split_state after the loop, record_tile_state behind a
// branch on the params inside it), and its loop compiles as the plain kernel's. tilescope's
// FA-1 kernel writes its events inline: there a call in the loop cost more than it saved
// (docs/perf.md, "Instrumented kernels with tracing off", has both measurements).
#pragma once

#include <cstdint>

#include "tilescope/event.h"
#include "tilescope/trace_view.h"

#if !defined(__CUDACC__) && !defined(TILESCOPE_SIMT_CPU)
#error "tilescope/probe.h is kernel code: include it in a .cu built by nvcc, or, for tilescope's CPU path, after <cuda_runtime.h> in a target built with tilescope_add_cpu_executable (or linked to tilescope::simt)"
#endif

#if defined(TILESCOPE_TRACE) && TILESCOPE_TRACE
#define TILESCOPE_PROBES_COMPILED 1
#else
#define TILESCOPE_PROBES_COMPILED 0
#endif

// The view in a __device__ symbol, so that a kernel's signature need not change.
#define TILESCOPE_TRACE_SYMBOL(name) __device__ ::tilescope::TraceView name

namespace tilescope {

inline constexpr bool kProbesCompiled = TILESCOPE_PROBES_COMPILED != 0;

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

#if defined(__CUDA_ARCH__)
// A special register read the compiler must repeat where it stands (volatile): never hoisted
// above a loop, never merged with an earlier read of the same register.
#define TILESCOPE_FRESH_SREG(name)                             \
  [] {                                                         \
    unsigned value;                                            \
    asm volatile("mov.u32 %0, %%" #name ";" : "=r"(value));   \
    return value;                                              \
  }()
#endif

}  // namespace probe_detail

// The block and thread an event is written from, read afresh at the event point (see the top
// of this file). Same values as blockIdx, gridDim and threadIdx.x.
struct EventSite {
  uint3 block;
  uint3 grid;
  int thread;

  __device__ static EventSite here() {
#if defined(__CUDA_ARCH__)
    return EventSite{uint3{TILESCOPE_FRESH_SREG(ctaid.x), TILESCOPE_FRESH_SREG(ctaid.y),
                           TILESCOPE_FRESH_SREG(ctaid.z)},
                     uint3{TILESCOPE_FRESH_SREG(nctaid.x), TILESCOPE_FRESH_SREG(nctaid.y),
                           TILESCOPE_FRESH_SREG(nctaid.z)},
                     static_cast<int>(TILESCOPE_FRESH_SREG(tid.x))};
#else
    return EventSite{uint3{blockIdx.x, blockIdx.y, blockIdx.z},
                     uint3{gridDim.x, gridDim.y, gridDim.z}, static_cast<int>(threadIdx.x)};
#endif
  }

  // The block's index in its launch: x fastest, then y, then z.
  __device__ int64_t block_linear() const {
    return static_cast<int64_t>(block.x) +
           static_cast<int64_t>(grid.x) *
               (static_cast<int64_t>(block.y) + static_cast<int64_t>(grid.y) * block.z);
  }
};

__device__ __forceinline__ int64_t block_linear() { return EventSite::here().block_linear(); }

// Builds an event's description: the state's coordinates; what it does not set keeps its
// default (kv head and split -1: not said; step 0; unnormalised natural convention; block -1:
// filled in by commit).
struct StateDesc {
  EventHeader h;

  // Adds a key range [begin, end). Past kMaxKeyRanges the description is marked invalid
  // (num_key_ranges = kMaxKeyRanges + 1): the recorder then refuses the event by name.
  __device__ StateDesc& keys(int32_t begin, int32_t end) {
    if (h.num_key_ranges < kMaxKeyRanges)
      h.keys[h.num_key_ranges++] = KeyRange{begin, end};
    else
      h.num_key_ranges = kMaxKeyRanges + 1;
    return *this;
  }
  __device__ StateDesc& kv_head(int32_t v) { h.kv_head = v; return *this; }
  __device__ StateDesc& split(int32_t v) { h.split = v; return *this; }
  __device__ StateDesc& step(int32_t v) { h.step = v; return *this; }
  __device__ StateDesc& block(int32_t v) { h.block = v; return *this; }
  __device__ StateDesc& convention(int32_t bits) { h.convention = bits; return *this; }
};

__device__ __forceinline__ StateDesc state(int32_t stage, int32_t batch, int32_t head,
                                           int32_t q_begin, int32_t rows) {
  StateDesc d{};
  d.h.stage = stage;
  d.h.convention = 0;
  d.h.batch = batch;
  d.h.head = head;
  d.h.kv_head = -1;
  d.h.q_begin = q_begin;
  d.h.rows = rows;
  d.h.split = -1;
  d.h.step = 0;
  d.h.block = -1;
  d.h.where = -1;
  d.h.num_key_ranges = 0;
  for (int i = 0; i < kMaxKeyRanges; ++i) d.h.keys[i] = KeyRange{0, 0};
  d.h.time_ns = 0;
  return d;
}

// Whether the view's filters keep an event of this description.
__device__ __forceinline__ bool filter_keeps(const TraceFilter& f, const EventHeader& h) {
  const bool stage_kept =
      h.stage >= 64 || h.stage < 0 || ((f.stage_mask >> static_cast<unsigned>(h.stage)) & 1u) != 0;
  return stage_kept && h.batch >= f.batch_begin && h.batch < f.batch_end &&
         h.head >= f.head_begin && h.head < f.head_end && h.q_begin < f.query_end &&
         h.q_begin + h.rows > f.query_begin;
}

// One open event: where the threads write their parts of the payload.
class Event {
 public:
  Event() = default;
  __device__ Event(const TraceView& view, int64_t slot)
      : header_(view.headers + slot),
        m_(view.m + slot * view.max_rows),
        l_(view.l + slot * view.max_rows),
        o_(view.o + slot * view.max_rows * static_cast<int64_t>(view.head_dim)),
        head_dim_(view.head_dim) {}

  __device__ explicit operator bool() const { return header_ != nullptr; }
  __device__ float* m() const { return m_; }
  __device__ float* l() const { return l_; }
  __device__ float* o_row(int row) const { return o_ + static_cast<int64_t>(row) * head_dim_; }

  // The header, from one thread; `where`, `time_ns` (and `block` when -1) are filled here.
  __device__ void commit(const EventHeader& desc) const {
    EventHeader h = desc;
    h.where = probe_detail::where_am_i();
    h.time_ns = probe_detail::now_ns();
    if (h.block < 0) h.block = static_cast<int32_t>(block_linear());
    *header_ = h;
  }
  __device__ void commit(const StateDesc& desc) const { commit(desc.h); }

 private:
  EventHeader* header_ = nullptr;
  float* m_ = nullptr;
  float* l_ = nullptr;
  float* o_ = nullptr;
  int32_t head_dim_ = 0;
};

namespace probe_detail {

// A slot from the view's counter, or -1 (counted as dropped) when the buffer is full.
__device__ __forceinline__ int64_t take_slot(const TraceView& view) {
  const unsigned long long slot = atomicAdd(view.next_slot, 1ull);
  if (slot >= static_cast<unsigned long long>(view.capacity)) {
    atomicAdd(view.dropped, 1ull);
    return -1;
  }
  return static_cast<int64_t>(slot);
}

}  // namespace probe_detail

// The calling thread's lane: its linear index in the block (x fastest) modulo the warp size,
// which is how a GPU forms warps of 2-D and 3-D blocks too.
__device__ __forceinline__ int lane_id() {
  const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  return static_cast<int>(linear % 32u);
}

// Path 1: one thread records a whole event. m and l hold desc.rows values, o rows of head_dim
// floats `o_row_stride` apart. Returns whether the event was written. A description of more
// rows than the view's max_rows is written with max_rows rows of payload and its own row count,
// which the recorder refuses by name (start it with a larger max_rows).
__device__ __forceinline__ bool record(const TraceView& view, const StateDesc& desc,
                                       const float* m, const float* l, const float* o,
                                       int64_t o_row_stride) {
  if constexpr (!kProbesCompiled) {
    (void)view, (void)desc, (void)m, (void)l, (void)o, (void)o_row_stride;
    return false;
  } else {
    if (view.headers == nullptr || !filter_keeps(view.filter, desc.h)) return false;
    const int64_t slot = probe_detail::take_slot(view);
    if (slot < 0) return false;
    const Event ev(view, slot);
    const int rows = desc.h.rows < view.max_rows ? desc.h.rows : view.max_rows;
    for (int r = 0; r < rows; ++r) {
      ev.m()[r] = m[r];
      ev.l()[r] = l[r];
      for (int c = 0; c < view.head_dim; ++c) ev.o_row(r)[c] = o[r * o_row_stride + c];
    }
    ev.commit(desc);
    return true;
  }
}
// A single-row state held as values: m and l, and O's head_dim floats at o.
__device__ __forceinline__ bool record(const TraceView& view, const StateDesc& desc, float m,
                                       float l, const float* o) {
  return record(view, desc, &m, &l, o, 0);
}

// Path 2: the lanes in `mask` (every lane of the warp that holds the payload) call it with the
// same description; the lowest lane of the mask takes the slot and shares it by a shuffle.
__device__ __forceinline__ Event open_warp(const TraceView& view, const StateDesc& desc,
                                           unsigned mask = 0xffffffffu) {
  if constexpr (!kProbesCompiled) {
    (void)view, (void)desc, (void)mask;
    return Event{};
  } else {
    if (view.headers == nullptr || !filter_keeps(view.filter, desc.h)) return Event{};
    const int leader = __ffs(mask) - 1;
    long long slot = -1;
    if (lane_id() == leader) slot = probe_detail::take_slot(view);
    slot = __shfl_sync(mask, slot, leader);
    return slot < 0 ? Event{} : Event(view, slot);
  }
}

// Path 3: a planned slot; every thread of the block calls it with the same description and
// `index` (the block's events of this stage, numbered from 0).
__device__ __forceinline__ Event open_planned(const TraceView& view, const StateDesc& desc,
                                              int index) {
  if constexpr (!kProbesCompiled) {
    (void)view, (void)desc, (void)index;
    return Event{};
  } else {
    if (view.headers == nullptr || !filter_keeps(view.filter, desc.h)) return Event{};
    const int64_t block = block_linear();
    int64_t slot;
    if (view.slot_base != nullptr) {
      const int64_t base = view.slot_base[block * view.num_stages + desc.h.stage];
      if (base < 0) return Event{};
      slot = base + index;
    } else {
      slot = block * view.events_per_block + index;
      if (index >= view.events_per_block) slot = view.capacity;  // more than the plan allows
    }
    if (slot >= view.capacity) {
      if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) atomicAdd(view.dropped, 1ull);
      return Event{};
    }
    return Event(view, slot);
  }
}

// Our kernels' form of path 3 (table plan), with the tracing decided per build by a template
// flag rather than by TILESCOPE_TRACE, so that one translation unit holds the plain and the
// traced kernels. It keeps one pointer (the block's row of the table) and nothing else: the
// view is passed again to open() from the kernel's params where the event is written, so the
// main loop holds no extra live state (holding the view's address made nvcc copy the params to
// local memory, 7% on the decode kernel; holding a copy changed the loop's registers, 40%).
template <bool kTrace>
class BlockProbe {
 public:
  __device__ BlockProbe(const TraceView& view, int64_t block_linear) {
    if constexpr (kTrace) {
      if (view.headers != nullptr && view.slot_base != nullptr)
        bases_ = view.slot_base + block_linear * view.num_stages;
    } else {
      (void)view;
      (void)block_linear;
    }
  }

  // Block-uniform: whether this block records events of this stage at all.
  __device__ bool wants(int32_t stage) const {
    if constexpr (kTrace) {
      return bases_ != nullptr && bases_[stage] >= 0;
    } else {
      (void)stage;
      return false;
    }
  }

  // Every thread calls it with the same arguments; `index` numbers this block's events of
  // `stage` from 0. An empty event when the stage is not recorded; a dropped one (counted once,
  // by the block's first thread) when its slot is past the capacity.
  __device__ Event open(const TraceView& view, int32_t stage, int index) const {
    if constexpr (kTrace) {
      if (!wants(stage)) return Event{};
      const int64_t slot = bases_[stage] + index;
      if (slot >= view.capacity) {
        if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) atomicAdd(view.dropped, 1ull);
        return Event{};
      }
      return Event{view, slot};
    } else {
      (void)view;
      (void)stage;
      (void)index;
      return Event{};
    }
  }

  // The event open() gave for the same stage and index, again, for a block that writes one
  // event's payload in several parts (kernels/splitk_reduce.cuh): a dropped one is not counted
  // twice.
  __device__ Event reopen(const TraceView& view, int32_t stage, int index) const {
    if constexpr (kTrace) {
      if (!wants(stage)) return Event{};
      const int64_t slot = bases_[stage] + index;
      return slot < view.capacity ? Event{view, slot} : Event{};
    } else {
      (void)view;
      (void)stage;
      (void)index;
      return Event{};
    }
  }

 private:
  const int64_t* bases_ = nullptr;
};

}  // namespace tilescope
