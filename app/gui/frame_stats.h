// Per-frame CPU time of the viewer (--frame-stats FILE.json): the numbers docs/perf.md quotes
// (median and 99th percentile). No GL.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ts {

struct FrameSummary {
  size_t frames = 0;  // frames summarised (after the warm-up ones)
  double median_ms = 0, p99_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0;
};

class FrameStats {
 public:
  // The first `warmup` frames (texture uploads, shader compilation) are recorded but left out
  // of the summary.
  explicit FrameStats(size_t warmup = 2) : warmup_(warmup) {}

  void add(double milliseconds) { frames_ms_.push_back(milliseconds); }
  // Optional breakdown of each frame (e.g. "ui", "render", "present"), summarised alike.
  void add_part(const std::string& part, double milliseconds) { parts_[part].push_back(milliseconds); }
  size_t count() const { return frames_ms_.size(); }
  FrameSummary summary() const;  // nearest-rank percentiles
  FrameSummary part_summary(const std::string& part) const;

  // {"summary": {...}, "parts": {"ui": {...}, ...}, "warmup_frames": n, "frames_ms": [...],
  // "context": {...}}, written atomically. Throws FileWriteError.
  void write_json(const std::filesystem::path& path, const std::vector<std::pair<std::string, std::string>>& context) const;

 private:
  size_t warmup_;
  std::vector<double> frames_ms_;
  std::map<std::string, std::vector<double>> parts_;
};

}  // namespace ts
