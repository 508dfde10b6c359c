// A run as the analysis and the views see it, whether it came from a trace file, from a launch of
// our kernels or from a user's recorder: the attention it computed, the stage table, its events
// with their payloads, the planned events it never wrote, the inputs of the traced heads, and
// the kernel's output — so that the float64 reference can be recomputed wherever the run is
// opened, knowing nothing about the kernel.
//
// Made by app/model/capture (from a launch) and app/model/trace_session (from a file); read by
// app/model/analysis, the CLI and the GUI. No GL, no kernels' launch code.
//
// The kernel's output is a stage like the others: when the run holds it, add_output_events
// appends one event of an "output" stage (kind final, the last pass) per (batch, head) whose
// inputs it holds and per row block, so the output is compared, counted in the verdict and drawn
// like every event.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/attention_config.h"
#include "base/attention_spec.h"
#include "base/head_inputs.h"
#include "base/host_tensor.h"
#include "instrumentation/trace/trace_event.h"
#include "kernels/tiling.h"

namespace ts {

struct RunEvent {
  const EventHeader& header;
  std::span<const float> m;  // [max_rows]; the first header.rows are meaningful
  std::span<const float> l;  // [max_rows]
  std::span<const float> o;  // [max_rows * head_dim], row-major
};

// The name of the stage add_output_events appends.
inline constexpr const char* kOutputStageName = "output";

struct RunView {
  AttentionSpec attention;          // what the reference computes
  std::vector<StageInfo> stages;    // the events' `stage` indexes it
  std::string label;                // what to call the run in reports: the file name, or "capture"
  std::map<std::string, std::string> metadata;  // the trace's metadata (kernel, backend, device...)
  // Runs of our kernels: what was launched and how it was tiled (re-runs, fault explanations).
  std::optional<AttentionConfig> config;
  std::optional<Tiling> tiling;
  int32_t max_rows = 0;
  int32_t head_dim = 0;
  uint64_t dropped_events = 0;
  uint64_t requested_events = 0;

  // Events in the order they were recorded (the kernels' own order where a plan gave it).
  // Recorded events come first, then those add_output_events appended; each segment's payloads
  // live in its own arrays.
  std::vector<EventHeader> headers;
  std::span<const float> m, l, o;   // recorded: [N, max_rows], [N, max_rows], [N, max_rows, head_dim]
  std::shared_ptr<const void> payload_owner;  // keeps the file's bytes (read into memory) / captured buffers alive
  size_t recorded_events = 0;       // headers[0, recorded_events) are the kernel's own
  size_t recorded_stages = 0;       // stages[0, recorded_stages) are the trace's own table
  std::vector<float> appended_m, appended_l, appended_o;  // payloads of the appended events
  std::vector<EventHeader> missing;  // planned events the kernel never wrote (no payload)

  HeadInputs inputs;                   // the traced heads' Q, K, V
  std::optional<HostTensor> output;    // the kernel's output [batch, heads_q, seq_q, head_dim]
  std::optional<std::vector<float>> output_lse;  // its LSE [batch, heads_q, seq_q], natural log

  size_t num_events() const { return headers.size(); }
  size_t num_stages() const { return stages.size(); }
  RunEvent event(size_t i) const {
    const size_t r = static_cast<size_t>(max_rows), hd = static_cast<size_t>(head_dim);
    if (i < recorded_events)
      return {headers[i], m.subspan(i * r, r), l.subspan(i * r, r), o.subspan(i * r * hd, r * hd)};
    const size_t j = i - recorded_events;
    return {headers[i], std::span<const float>(appended_m).subspan(j * r, r),
            std::span<const float>(appended_l).subspan(j * r, r),
            std::span<const float>(appended_o).subspan(j * r * hd, r * hd)};
  }
  const StageInfo& stage_of(size_t i) const { return stages[static_cast<size_t>(headers[i].stage)]; }
  // The stage index of a name, or -1.
  int32_t stage_index(std::string_view name) const;
};

// Appends the output's events (see the top of this file). Rows per event: max_rows when the run
// has events, else up to 64; the m channel holds output_lse when the run has it (else it is
// marked not recorded, kNoMax). Does nothing for a run without output or already holding the
// output stage. Throws std::invalid_argument when the output's shape does not fit the attention.
void add_output_events(RunView& run);

}  // namespace ts
