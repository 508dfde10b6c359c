#include "app/model/viewer/background_job.h"

namespace ts {

std::string_view to_string(JobState state) {
  switch (state) {
    case JobState::idle: return "idle";
    case JobState::running: return "running";
    case JobState::succeeded: return "succeeded";
    case JobState::failed: return "failed";
    case JobState::cancelled: return "cancelled";
  }
  return "unknown";
}

void JobProgress::set_phase(std::string phase) {
  const std::lock_guard<std::mutex> lock(mutex_);
  phase_ = std::move(phase);
  done_ = total_ = 0;
}

void JobProgress::set(uint64_t done, uint64_t total) {
  const std::lock_guard<std::mutex> lock(mutex_);
  done_ = done;
  total_ = total;
}

JobProgress::Snapshot JobProgress::snapshot() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return {phase_, done_, total_};
}

}  // namespace ts
