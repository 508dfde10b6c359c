// A run as the analysis and the views see it, whether it came from a trace file or straight
// from a launch: what was run and how it was tiled, its events in the kernels' own order with
// their payloads, and the inputs of the traced (batch, head) pairs, so that the float64
// reference can be recomputed wherever the run is opened.
//
// Made by app/model/capture (from a launch) and app/model/trace_session (from a file); read by
// app/model/analysis, the CLI and the GUI. No GL, no kernels' launch code.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "instrumentation/trace/trace_event.h"
#include "instrumentation/trace/trace_file.h"
#include "kernels/attention_config.h"
#include "kernels/host_tensor.h"
#include "kernels/tiling.h"

namespace ts {

struct RunEvent {
  const EventHeader& header;
  std::span<const float> m;  // [block_m]; the first header.rows are meaningful
  std::span<const float> l;  // [block_m]
  std::span<const float> o;  // [block_m * head_dim], row-major
};

struct RunView {
  AttentionConfig config;  // as run: num_splits resolved
  Tiling tiling;
  std::string label;       // what to call the run in reports: the file name, or "capture"
  std::map<std::string, std::string> metadata;  // the trace's metadata (backend, device, seed...)
  int32_t block_m = 0;
  int32_t head_dim = 0;
  uint64_t dropped_events = 0;

  std::vector<EventHeader> headers;  // in the kernels' own order
  std::span<const float> m, l, o;    // [N, block_m], [N, block_m], [N, block_m, head_dim]
  std::shared_ptr<const void> payload_owner;  // keeps the file's bytes / captured buffers alive

  TraceInputs inputs;                // the traced pairs' Q, K, V ([P, seq, head_dim] each)
  std::optional<HostTensor> output;  // the launch's output [batch, heads, seq_q, head_dim]

  size_t num_events() const { return headers.size(); }
  RunEvent event(size_t i) const {
    const size_t bm = static_cast<size_t>(block_m), hd = static_cast<size_t>(head_dim);
    return {headers[i], m.subspan(i * bm, bm), l.subspan(i * bm, bm),
            o.subspan(i * bm * hd, bm * hd)};
  }
  // Index into inputs.pairs of (batch, head), or -1 when the pair was not traced.
  int32_t pair_index(int64_t batch, int64_t head) const {
    for (size_t i = 0; i < inputs.pairs.size(); ++i)
      if (inputs.pairs[i][0] == batch && inputs.pairs[i][1] == head) return static_cast<int32_t>(i);
    return -1;
  }
};

}  // namespace ts
