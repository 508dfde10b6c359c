// The `tilescope capture` options that set each field of a capture request: what the CLI says
// where the model's checks (app/model/capture/capture_check.h) name a field, in words of
// neither front end. The one table of them.
#pragma once

#include <string>
#include <string_view>

#include "app/model/capture/capture_field.h"

namespace ts::cli {

// "--capacity", "--trace-head"; for a field several options set together, all of them
// ("--batch, --heads, --seq-q or --head-dim").
std::string_view option_for(CaptureField field);

// What to do about a full trace buffer, naming the options: "capture again with a larger
// --capacity or narrower filters (--trace-batch, --trace-head, --trace-queries, --stages)".
std::string capacity_hint();
// The same for a trace a user's kernel recorded (tilescope.record, the C++ Recorder): no capture
// options apply to it.
std::string recording_capacity_hint();

}  // namespace ts::cli
