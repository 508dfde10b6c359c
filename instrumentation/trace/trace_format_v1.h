// Reading format 1 traces (tilescope 0.1) as format 2: the only place that knows format 1.
//
// Format 1 had four fixed stages (0 "fa1.step", 1 "splitk.partial", 2 "splitk.reduce",
// 3 "final"), events placed by query tile and kv tiles (metadata block_m, block_n), inputs per
// (batch, head) pair ("inputs.pairs" with "inputs.q/k/v", plain multi-head attention) and the run's
// AttentionConfig in metadata "config" (bottom-right causal). The conversion gives:
//   - the stage table of those four stages, indices unchanged (the reduce a merge in pass 1;
//     the final output in pass 1 for Split-K runs, 0 for FA-1);
//   - per event: q_begin = q_tile * block_m, one key range [begin * block_n, min(end * block_n,
//     seq_kv)), kv_head = head, and the final output's step after the block's other events;
//   - the missing events a full trace of the traced tiles would hold (format 1 stored none;
//     the 0.1 analysis derived them from the tiling the same way), unless events were dropped;
//   - the attention description from the config.
#pragma once

#include <cstdint>
#include <vector>

#include "base/attention_spec.h"
#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/trace_event.h"

namespace ts {

struct Format1Trace {
  AttentionSpec attention;
  std::vector<StageInfo> stages;
  int32_t max_rows = 0, head_dim = 0;
  uint64_t dropped = 0, requested = 0;
  std::vector<EventHeader> headers, missing;
  TensorView<float> m, l, o;
};

// The most events the conversion lists (recorded and missing) for a format 1 trace: the tiling
// it claims is trusted no further (a few MB can claim millions of kv tiles).
inline constexpr uint64_t kMaxFormat1ExpectedEvents = uint64_t{1} << 22;

// Checks a format 1 trace as the 0.1 reader did and converts it. Throws TraceFormatError naming
// the file and the problem (also when the config needed for the conversion is absent).
Format1Trace read_format_1(const SafetensorsFile& file);

}  // namespace ts
