// The metadata a capture writes into its trace beyond the trace layer's own keys
// (instrumentation/trace/trace_file.h, ts::trace_meta): how the random inputs were drawn, the
// trace request, the CPU runtime's options, timing. Every value is a string; JSON values are
// compact JSON text. The trace filter's JSON form is shared with readers (info, the GUI).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "app/model/generated_inputs.h"
#include "instrumentation/trace/trace_file.h"
#include "instrumentation/trace/trace_capture.h"

namespace ts {

namespace capture_meta {
// The random inputs' spec (app/model/generated_inputs.h holds these keys and their recipe's).
inline constexpr std::string_view inputs_distribution = input_meta::distribution;
inline constexpr std::string_view inputs_scale = input_meta::scale;
inline constexpr std::string_view inputs_preset = input_meta::preset;
inline constexpr std::string_view trace_capacity = "trace_capacity";  // events the buffer held
inline constexpr std::string_view elapsed_ms = "elapsed_ms";          // the kernels' time
inline constexpr std::string_view cpu_workers = "cpu_workers";        // CPU backend only
inline constexpr std::string_view perturb_seed = "perturb_seed";      // CPU backend, when set
inline constexpr std::string_view captured_at = "captured_at";        // UTC, ISO 8601
inline constexpr std::string_view inputs_stored = trace_meta::inputs_stored;
}  // namespace capture_meta

// {"enabled": true, "batch": [0, null], "head": [1, 3], "queries": [0, null],
//  "stages": ["fa1.step", "final"]}: half-open ranges, null = to the end; stages named from the
// kernel's stage table.
nlohmann::json trace_filter_to_json(const TraceRequest& request, const std::vector<StageInfo>& stages);
// The inverse (capacity is stored under its own key); throws CaptureError naming the
// field when the JSON does not have this form.
TraceRequest trace_request_from_json(const nlohmann::json& json, const std::vector<StageInfo>& stages);

// "fa1.step,final" -> stage mask over a stage table; throws CaptureError naming an unknown
// stage and the table's names.
uint64_t stage_mask_from_names(std::string_view comma_separated, const std::vector<StageInfo>& stages);
std::string stage_mask_names(uint64_t mask, const std::vector<StageInfo>& stages);  // "fa1.step,final"
// Every stage of a table.
uint64_t all_stages_mask(const std::vector<StageInfo>& stages);

// Decimal text of a double that reads back to the same value ("0.125", "1e-05").
std::string exact_decimal(double x);

}  // namespace ts
