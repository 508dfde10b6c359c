// A launch that could not run or did not finish. The message names the problem and what to
// do; reason() tells the caller which kind it was (a cancelled run is not a failure to show
// as an error, a missing GPU may be retried on the CPU).
#pragma once

#include <stdexcept>
#include <string>

namespace ts {

enum class LaunchFailure : int {
  failed = 0,     // the kernel or the runtime reported an error (message says which)
  no_device = 1,  // Backend::gpu with no usable CUDA device
  not_built = 2,  // Backend::gpu in a build without CUDA
  cancelled = 3,  // LaunchRequest::cancel was set
  too_large = 4,  // buffers (outputs, partials, trace) would not fit in memory
};

class LaunchError : public std::runtime_error {
 public:
  LaunchError(LaunchFailure reason, const std::string& message)
      : std::runtime_error(message), reason_(reason) {}
  LaunchFailure reason() const { return reason_; }
  bool cancelled() const { return reason_ == LaunchFailure::cancelled; }

 private:
  LaunchFailure reason_;
};

}  // namespace ts
