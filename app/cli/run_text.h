// Short texts about a run that several subcommands print: events by stage, sizes, the config
// on one line, and the summary `tilescope capture` ends with.
#pragma once

#include <vector>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "app/model/capture/run_capture.h"
#include "app/model/run_view.h"

namespace ts::cli {

// Events recorded per stage of the run's table (the output's appended events not counted).
std::vector<size_t> events_by_stage(const RunView& run);
// "16 splitk.partial, 16 splitk.reduce, 2 final" (stages with events only; "none" if empty).
std::string events_by_stage_text(const RunView& run);
// "1.2 MiB"
std::string bytes_text(uint64_t bytes);
// "splitk/double_count_l, batch 1 x heads 2, seq_q 64, seq_kv 1024, head_dim 64, fp16,
//  causal, 8 splits"
std::string config_text(const AttentionConfig& c);

// The paragraph `tilescope capture` prints when done: what ran where, events by stage,
// dropped events (and what to do about them), the file written and its size, times.
std::string capture_summary(const CaptureResult& result, const std::filesystem::path& written,
                            double total_seconds);

}  // namespace ts::cli
