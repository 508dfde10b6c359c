// The unit of a trace: one event is what one block of a kernel held at one probe point —
// its coordinates (stage, batch, head, query tile, kv tiles or split, step in the block's own
// order), where and when it ran, and payloads per query row of the tile: m, l (float32) and
// O (block_m x head_dim float32).
//
// Plain structs with one layout on the GPU, on the CPU and in the trace file. Compiled by
// nvcc and by the host compiler alike.
#pragma once

#include <cstdint>

namespace ts {

enum class Stage : int32_t {
  fa1_step = 0,        // "fa1.step":       FA-1 running state after a kv tile
  splitk_partial = 1,  // "splitk.partial": a split's state at the end of the partial pass
  splitk_reduce = 2,   // "splitk.reduce":  the reduce's merged state after merging a split
  final_output = 3,    // "final":          the output row block as written (O and LSE)
};
inline constexpr int kNumStages = 4;

// How a stage stores its state, so that comparisons are never fooled by conventions:
//   unnormalized: m = running max of the scaled scores, l = sum exp(s - m),
//                 O = sum exp(s - m) * v   (divide by l for the attention output)
//   normalized:   the m channel holds LSE = m + log(l), the l channel holds 1,
//                 O = softmax(s) V         (the attention output itself)
enum class Convention : int32_t { unnormalized = 0, normalized = 1 };

struct EventHeader {
  int32_t stage;          // Stage
  int32_t convention;     // Convention
  int32_t batch;
  int32_t head;
  int32_t q_tile;         // query rows [q_tile * block_m, q_tile * block_m + rows)
  int32_t kv_tile_begin;  // kv tiles [begin, end) whose keys this state covers
  int32_t kv_tile_end;    //   (the reduce: the union of the splits merged so far)
  int32_t split;          // split index (partial: its own; reduce: the one just merged); -1 otherwise
  int32_t step;           // the event's number in its block's own order, from 0
  int32_t rows;           // valid query rows in this tile (<= block_m)
  int32_t where;          // GPU: SM id; CPU: SIMT worker index
  int32_t block;          // linear block index within its launch
  uint64_t time_ns;       // GPU: %globaltimer; CPU: steady clock, both in nanoseconds
};
static_assert(sizeof(EventHeader) == 56, "EventHeader is a file format");

// Stage names as they appear in files, reports and the GUI.
inline constexpr const char* kStageNames[kNumStages] = {"fa1.step", "splitk.partial",
                                                        "splitk.reduce", "final"};

constexpr uint32_t stage_bit(Stage s) { return 1u << static_cast<uint32_t>(s); }
inline constexpr uint32_t kAllStages = (1u << kNumStages) - 1u;

// What a launch hands its kernels (by value, inside the kernel's params struct). All arrays
// live where the kernel runs (device memory on the GPU). headers == nullptr: tracing is off.
struct TraceDeviceView {
  EventHeader* headers = nullptr;          // [capacity]
  float* m = nullptr;                      // [capacity][block_m]
  float* l = nullptr;                      // [capacity][block_m]
  float* o = nullptr;                      // [capacity][block_m][head_dim]
  int64_t capacity = 0;                    // events the buffer holds
  unsigned long long* dropped = nullptr;   // events that did not fit (counted exactly)
  // [blocks of this launch][kNumStages]: the slot of the block's first event of a stage, or
  // -1 when a capture filter excludes the block or the stage. The launcher lays the slots out
  // block after block, and within a block in the order its stages occur, so the buffer is in
  // the kernels' own order whatever order the blocks ran in.
  const int64_t* block_slot_base = nullptr;
  int32_t block_m = 0;
  int32_t head_dim = 0;
};

}  // namespace ts
