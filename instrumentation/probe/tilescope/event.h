// tilescope's event: what one probe point of an attention kernel held — a softmax state of some
// query rows over some keys — described in its own fields, so that a float64 reference can
// compute the same state from the inputs and the attention description without knowing which
// kernel wrote it. One layout on the GPU, on the CPU and in a trace file (format 2,
// docs/trace-format.md). Part of the installed SDK: depends on nothing but <cstdint>.
//
// An event says:
//   - which stage of the kernel wrote it: an index into the trace's stage table, where the
//     recorder declares each stage's name (chosen by the kernel: "my_partial", "merge"...), its
//     kind (StageKind below) and its pass (launch order);
//   - which state: batch, query head, kv head (GQA/MQA), query rows [q_begin, q_begin + rows)
//     (query indices within the batch's sequence), and the keys it covers as up to
//     kMaxKeyRanges half-open ranges of key indices (before masking: the reference applies the
//     attention description's masks inside them);
//   - how the state is stored (the convention bits below);
//   - where it sits in the kernel's own order (pass of its stage, then split, then step) and
//     where and when it ran (SM or CPU worker, nanoseconds).
// Payloads live beside the header, per query row: m and l (float32) and O (head_dim float32).
#pragma once

#include <cstdint>

namespace tilescope {

// Key ranges an event can carry: a merge of non-adjacent states, or a split that takes kv
// tiles round-robin, covers several.
inline constexpr int kMaxKeyRanges = 8;

// How an event's state is stored. Bits; 0 is the unnormalised natural-log state of scaled
// scores, the reference's own:
//   m = max_j s_j,  l = sum_j exp(s_j - m),  O = sum_j exp(s_j - m) v_j,
// where s_j = scale * q . k_j (after softcap / ALiBi when the attention description has them).
enum ConventionBits : int32_t {
  // O = softmax(s) V (divided by l); the m channel holds LSE = m + log l; l is not read.
  kNormalized = 1,
  // The m (or LSE) channel is in base-2 units: the stored value is x log2(e) (FlashInfer and
  // FA3 fold log2 e into the scores and use exp2). l and O are unaffected.
  kLogBase2 = 2,
  // The m channel holds the max of raw scores q . k, before the softmax scale (flash-
  // attention 2 keeps its running max so and applies the scale inside exp): stored = m / scale.
  // Meaningful for unnormalised states only.
  kUnscaledMax = 4,
  // The m (or LSE) channel was not recorded (a kernel that keeps no LSE): it is not compared.
  kNoMax = 8,
};
inline constexpr int32_t kConventionMask = kNormalized | kLogBase2 | kUnscaledMax | kNoMax;

// What kind of state a stage holds; declared per stage in the trace's stage table.
enum class StageKind : int32_t {
  state = 0,  // a softmax state over the event's key ranges (a running state, a partial)
  merge = 1,  // a state over its key ranges made by merging states recorded earlier (a reduce)
  final = 2,  // the attention output as written: every key each row sees (key ranges unread)
};

struct KeyRange {
  int32_t begin;
  int32_t end;  // one past the last key; begin == end covers nothing
};

struct EventHeader {
  int32_t stage;           // index into the trace's stage table; -1 marks a slot never written
  int32_t convention;      // ConventionBits
  int32_t batch;
  int32_t head;            // query head
  int32_t kv_head;         // the kv head the kernel read (GQA/MQA); -1: not said
  int32_t q_begin;         // first query row, an index within the batch's sequence
  int32_t rows;            // query rows [q_begin, q_begin + rows); <= the trace's max_rows
  int32_t split;           // the kernel's partition of the keys this event belongs to; -1: none
  int32_t step;            // the event's number in its block's own order, from 0
  int32_t block;           // linear index of the block that wrote it, within its launch
  int32_t where;           // GPU: SM id; CPU: SIMT worker; -1 unknown
  int32_t num_key_ranges;  // 0..kMaxKeyRanges
  KeyRange keys[kMaxKeyRanges];
  uint64_t time_ns;        // GPU: %globaltimer; CPU: steady clock; nanoseconds
};
static_assert(sizeof(EventHeader) == 120, "EventHeader is a file and device layout");

}  // namespace tilescope
