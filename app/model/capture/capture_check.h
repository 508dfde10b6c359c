// The one check of a capture request, for every front end (the CLI's `capture`, the GUI's
// launch form) and for run_capture itself: the config, the random inputs' scale or the input
// files, the trace filter's ranges within the run's sizes and its stages, the capacity, and the
// CPU runtime's options. Each problem names its field (CaptureField) and says what is wrong in
// words of neither front end: the CLI adds its option's name (app/cli_common/capture_flags.h),
// the GUI its form's label (app/model/viewer/launch_form.h). Also the index ranges both front
// ends read as text.
//
//   for (const CaptureProblem& p : capture_problems(spec)) show(p.field, p.message);
//   check_capture(spec);  // throws the first problem
//   auto [begin, end] = parse_index_range("2:5", CaptureField::trace_heads);  // [2, 5)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/model/capture/capture_field.h"
#include "app/model/capture/capture_spec.h"

namespace ts {

struct CaptureProblem {
  CaptureField field;
  std::string message;  // what is wrong, naming no option and no label
};

// The SIMT runtime's worker threads a request may ask for (0 = all cores).
inline constexpr int kMaxCpuWorkers = 1024;

// Every problem of the request, in CaptureField order. An invalid config is one problem (the
// first that validate(AttentionConfig) finds); the trace ranges are then checked for their
// form only, not against the run's sizes. Input files are checked to exist as regular files
// (their contents are read, and checked, by the capture).
std::vector<CaptureProblem> capture_problems(const CaptureSpec& spec);

// Throws the first problem: ConfigError (as validate throws it) for the config, CaptureError
// with its field for the rest. Beyond capture_problems, a trace whose filters, each in range,
// keep no event of the run (the launch plan's count) is refused: it is checked here, when a
// capture is asked for, since the plan lays out every block of the run.
void check_capture(const CaptureSpec& spec);

// The field a ConfigError of validate(AttentionConfig) names (ConfigError::field(): "seq_q",
// "num_splits", "q"...); nullopt for names validate does not use.
std::optional<CaptureField> capture_field_of_config(std::string_view config_field);

// The trace filter's index ranges (TraceFilter): int32, an open end is INT32_MAX.
inline constexpr int32_t kOpenRangeEnd = INT32_MAX;

// Index ranges as a person types them: "A:B" is [A, B) (A up to, not including, B), "A:" is
// [A, open), ":B" is [0, B), "N" is [N, N + 1), "" is everything; spaces around the numbers are
// ignored. Throws CaptureError(field) for anything else, a negative or empty range, or a bound
// past the filter's int32 range.
std::pair<int32_t, int32_t> parse_index_range(std::string_view text, CaptureField field);
// The inverse: "" for everything, "A:", "N" or "A:B".
std::string index_range_text(int32_t begin, int32_t end);

}  // namespace ts
