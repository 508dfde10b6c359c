// A format-2 trace made by hand from the schema (docs/trace-format.md), as a user's own
// recorder would make one, not by tilescope's kernels: the tests of the reader and of the
// analysis read and diff it. Library target ts_handwritten_trace.
//
// What it holds, and why each part is there:
//   - a stage table of the user's own words: 0 "my_partial" (state, pass 0), 1 "combine"
//     (merge, pass 1), 2 "epilogue" (final, pass 1) — no stage of ours;
//   - GQA: 4 query heads on 2 kv heads (kv_head = head / 2), batch 2, 13 queries on 200 keys,
//     head dim 32, fp16 inputs, causal (bottom-right);
//   - splits of the keys that no tiling makes: [0, 37), [37, 120), [120, 150) + [180, 200) (two
//     non-adjacent ranges), [150, 180) — merged in that order, so a merge covers ranges that are
//     not a prefix of the keys until the last;
//   - query rows in blocks of at most 8 rows: [0, 8) and [8, 13);
//   - partial and merged states normalised with a base-2 LSE (kNormalized | kLogBase2, as
//     FlashInfer stores them), the output normalised with a natural LSE;
//   - inputs per (batch, query head) and per (batch, kv head), and the output with its LSE.
// Every payload is the float64 reference (kernels/reference.h) of the event's rows over its key
// ranges, expressed in its convention (express), rounded to float32: a correct trace.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/attention_spec.h"
#include "base/head_inputs.h"
#include "base/host_tensor.h"
#include "instrumentation/trace/trace_file.h"

namespace ts::test {

inline constexpr int32_t kMyPartialStage = 0;
inline constexpr int32_t kCombineStage = 1;
inline constexpr int32_t kEpilogueStage = 2;

// The conventions the hand-written trace stores its states in.
inline constexpr int32_t kHandwrittenStateConvention = kNormalized | kLogBase2;
inline constexpr int32_t kHandwrittenOutputConvention = kNormalized;

struct HandwrittenTrace {
  AttentionSpec spec;
  std::vector<std::vector<KeyRange>> splits;  // each split's key ranges, in merge order
  std::vector<std::array<int32_t, 2>> row_blocks;  // (q_begin, rows)
  HeadInputs inputs;                          // every (batch, query head), every (batch, kv head)
  CapturedEvents events;
  HostTensor output;                          // [batch, heads_q, seq_q, head_dim], fp16
  std::vector<float> output_lse;              // natural
  std::map<std::string, std::string> metadata;

  // The index of an event: `stage` for (batch, head) and the row block starting at `q_begin`;
  // `split` is the split of a partial or the split just merged by a combine (ignored for the
  // epilogue). Throws std::out_of_range when there is none.
  size_t find(int32_t stage, int32_t batch, int32_t head, int32_t q_begin, int32_t split = -1) const;

  // What write_trace needs (pointers into this object).
  TraceContents contents() const;
};

// Inputs drawn from N(0, 1) (never zero) with `seed`, payloads from the reference.
HandwrittenTrace make_handwritten_trace(uint64_t seed);

void write_handwritten_trace(const std::filesystem::path& path, const HandwrittenTrace& trace);

// A kernel error planted in the trace (the file stays valid): adds `delta` to O[row][col] of
// event `index`.
void perturb_o(HandwrittenTrace& trace, size_t index, int32_t row, int32_t col, float delta);

}  // namespace ts::test
