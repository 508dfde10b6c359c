#include "app/gui/frame_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/atomic_file.h"

namespace ts {

FrameSummary FrameStats::summary() const {
  FrameSummary s;
  if (frames_ms_.size() <= warmup_) return s;
  std::vector<double> v(frames_ms_.begin() + static_cast<std::ptrdiff_t>(warmup_), frames_ms_.end());
  std::sort(v.begin(), v.end());
  const auto rank = [&](double p) {  // nearest rank: the smallest value with p of the data at or below it
    const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(k, 1, v.size()) - 1];
  };
  s.frames = v.size();
  s.median_ms = rank(0.5);
  s.p99_ms = rank(0.99);
  s.mean_ms = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.min_ms = v.front();
  s.max_ms = v.back();
  return s;
}

void FrameStats::write_json(const std::filesystem::path& path,
                            const std::vector<std::pair<std::string, std::string>>& context) const {
  const FrameSummary s = summary();
  nlohmann::json j;
  j["summary"] = {{"frames", s.frames}, {"median_ms", s.median_ms}, {"p99_ms", s.p99_ms}, {"mean_ms", s.mean_ms},
                  {"min_ms", s.min_ms},  {"max_ms", s.max_ms}};
  j["warmup_frames"] = std::min(warmup_, frames_ms_.size());
  j["frames_ms"] = frames_ms_;
  nlohmann::json ctx = nlohmann::json::object();
  for (const auto& [k, v] : context) ctx[k] = v;
  j["context"] = ctx;
  const std::string text = j.dump(2) + "\n";
  AtomicFileWriter out(path);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace ts
