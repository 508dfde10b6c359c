// What the GUI's export (Ctrl+E) calls its folder: after the run and the selected event, so that
// exports of several steps sit side by side and say what they hold, e.g.
// "splitk_demo_splitk.reduce_b0_h0_q0_s2" (the trace's stem, the event's stage, batch, head,
// first query row and split; the step when the event has no split), and never an existing path:
// "-2", "-3"... appended until the name is free.
#pragma once

#include <filesystem>
#include <string>

#include "app/model/run_view.h"

namespace ts {

// `run_name`: the trace's file name (its ".trace.safetensors" or other extension dropped) or
// any label; `event`: an index into run's events, or none.
std::string export_folder_name(const std::string& run_name, const RunView* run, std::optional<size_t> event);

// `wanted`, or wanted-2, wanted-3... : the first that does not exist.
std::filesystem::path unused_path(const std::filesystem::path& wanted);

}  // namespace ts
