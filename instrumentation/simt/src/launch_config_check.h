// Validation of a launch before anything runs: the limits a CUDA device enforces, so a
// configuration that would fail on a GPU fails the same way on the CPU, with a message.
#pragma once

#include <optional>
#include <string>

#include "instrumentation/simt/runtime.h"

namespace simt::detail {

// The problem with this launch, or nothing if it can run.
std::optional<std::string> launch_problem(const LaunchConfig& config, const LaunchOptions& options);

}  // namespace simt::detail
